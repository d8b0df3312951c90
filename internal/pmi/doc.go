// Package pmi is a client of the PMI-1 wire protocol ("simple PMI") that
// process managers such as MPICH's hydra (mpiexec) speak to the processes
// they start: it gives a process its rank and the job size, a key-value
// space shared by the job, and a barrier.
//
// The process manager passes a connected socket in PMI_FD (or an address in
// PMI_PORT) and the process's place in PMI_RANK and PMI_SIZE. Requests and
// responses are single lines of space-separated key=value pairs, the first
// being cmd=...:
//
//	cmd=init pmi_version=1 pmi_subversion=1  -> cmd=response_to_init ... rc=0
//	cmd=get_maxes                            -> cmd=maxes kvsname_max=.. keylen_max=.. vallen_max=..
//	cmd=get_appnum                           -> cmd=appnum appnum=0
//	cmd=get_my_kvsname                       -> cmd=my_kvsname kvsname=...
//	cmd=put kvsname=K key=k value=v          -> cmd=put_result rc=0
//	cmd=barrier_in                           -> cmd=barrier_out
//	cmd=get kvsname=K key=k                  -> cmd=get_result rc=0 value=v
//	cmd=finalize                             -> cmd=finalize_ack
//	cmd=abort exitcode=N                     (the process manager ends the job)
//
// Values put before a barrier are visible to every rank after it. Keys and
// values must not contain spaces, '=' (keys) or newlines; callers encode
// binary values (hex). ParseResponse decodes one response line and has a
// fuzz target; malformed input yields an error wrapping ErrProtocol.
//
// A Client owns its connection and is not safe for concurrent use.
package pmi
