// Command ftallreduce sums vectors across the ranks of a job in a loop and
// keeps going when a rank dies: the survivors see the peer-failed status
// (ucp's peer error mode with suspended matching), agree on who is gone
// and where to resume, purge the dead rank's endpoint, shrink their group
// and finish, printing a checked sum.
//
//	go build -o ftallreduce ./examples/ftallreduce
//	mpiexec -disable-auto-cleanup -n 4 ./ftallreduce -kill 2 -at 30
//
// Without -disable-auto-cleanup hydra ends the whole job when one rank
// dies; and since hydra ends it anyway when a rank is killed by a signal,
// each rank runs under bootstrap.Supervise, which reports the death of the
// rank proper as exit status 137. Under Slurm:
// srun --mpi=pmi2 -n 4 --kill-on-bad-exit=0 ./ftallreduce -kill 2 -at 30.
//
// Rank r's vector in iteration i is v[j] = (r+1)(i+1)+j; each iteration's
// result is the sum of the vectors of the group's ranks. Every rank
// checks each result element by element against that formula and prints
// the sum of all results, which depends only on the iteration from which
// the group is smaller.
//
// With -kill R -at K rank R, in iteration K, sends its vector to half of
// the others and SIGKILLs itself, so that some survivors complete
// iteration K with R's vector and some never get it. Each survivor learns
// of the death from its endpoint's error handler; it cancels the
// iteration's receives, purges the dead rank (which resumes matching) and
// enters an agreement: in rounds, every survivor sends every other the set
// of ranks it knows failed and the first iteration it has not completed,
// and takes the union and the minimum of what it receives; a rank whose
// receive fails joins the set. A round in which every message equals its
// own ends the agreement, identically at every survivor. The survivors
// then drop the failed ranks from the group and resume at the agreed
// iteration in a new epoch, whose tags cannot match stale messages. The
// kill must come before the last iteration: a rank that completed the
// last iteration does not join an agreement.
package main
