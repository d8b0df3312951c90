// Package slurmtest runs a one-node Slurm cluster for a test: its own
// munged (on a private socket), slurmctld and slurmd, as root, from
// Debian's munge, slurmctld, slurmd and slurm-client packages, with a
// configuration in the test's temporary directory (proctrack/linuxproc,
// no cgroups, no accounting). Srun runs a job step on it with
// --mpi=pmi2. The cluster is stopped at cleanup. Tests skip when not root
// or when a package is missing.
package slurmtest
