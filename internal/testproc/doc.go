// Package testproc runs a package's test binary again as a child process
// that plays a role. Cross-process tests of ucgo use it: a role is a
// function registered by name; TestMain calls Main, which runs the role
// when the process is a child and the tests otherwise; Start re-executes
// the test binary (optionally inside a network namespace) as a child
// playing a role, with a pipe to its stdin and one from its stdout, and
// kills and reaps it when the test ends. Every wait is bounded.
// ExecutableForNobody and AsNobody run a copy of the test binary as user
// nobody, for tests of what an unprivileged process may do.
package testproc
