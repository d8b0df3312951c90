// Package bootstrap starts a ucgo job under the launcher a cluster already
// has: it reads the launcher's environment, speaks the process management
// interface (PMI-1 or PMI-2) to learn this process's rank and the job's
// size, exchanges values through the job's key-value space with barriers,
// and on top of that opens a ucp worker, publishes its address and
// returns a World of endpoints to every rank.
//
// # Launchers
//
// MPICH's hydra (mpiexec) and Slurm's srun --mpi=pmi2 pass a connected
// socket in PMI_FD (hydra with -pmi-port: an address in PMI_PORT) and the
// process's place in PMI_RANK and PMI_SIZE. FromEnv connects and, unless
// UCGO_PMI=1 or UCGO_PMI=2 says otherwise, offers PMI-2 and speaks the
// version the process manager answers with.
//
// # PMI-1
//
// Requests and responses are single lines of space-separated key=value
// pairs, the first being cmd=...:
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
// ParseResponse decodes one line.
//
// # PMI-2
//
// The client sends the PMI-1 line "cmd=init pmi_version=2
// pmi_subversion=0" and, once answered with pmi_version=2, frames: a
// 6-byte decimal length padded with spaces, then "cmd=NAME;key=value;..."
// with ';' in values doubled:
//
//	fullinit pmirank=R threaded=FALSE   -> fullinit-response rank= size= appnum= rc=0
//	job-getid                           -> job-getid-response jobid=J rc=0
//	kvs-put key=k value=v               -> kvs-put-response rc=0
//	kvs-fence                           -> kvs-fence-response rc=0 (see Barrier)
//	kvs-get jobid=J srcid=-1 key=k      -> kvs-get-response found=TRUE value=v rc=0
//	finalize                            -> finalize-response rc=0
//	abort isworld=TRUE msg=...          (the process manager ends the job)
//
// EncodeCommand2 and DecodeFrame2 write and read one frame. Both decoders
// have fuzz targets; malformed input yields an error wrapping ErrProtocol.
//
// Values put before a barrier are visible to every rank after it. PMI-2's
// Barrier is kvs-fence followed by a kvs-get of a key nobody puts: Slurm's
// fence waits for every rank, hydra's returns at once and holds that get
// until every rank has fenced. Keys
// and values must not contain spaces, ';', '=' (keys) or newlines;
// callers encode binary values (hex). A Client owns its connection and is
// not safe for concurrent use.
//
// # World
//
// Start (FromEnv, then NewWorld) opens a ucp context and worker, puts the
// worker's address in the key-value space (hex, split over several keys
// when longer than the process manager's value limit), meets the other
// ranks at a barrier and returns a World. World.EP(r) is the endpoint to
// rank r, connected at once (WorldOptions.Eager) or on first use, with
// EPParams.SourceTag = Tag(r, 0): the rank sits in the top RankBits bits
// of every tag (RankMask, which Start sets as Config.SourceTagMask), so
// that in ucp's peer error mode the worker knows which posted receives
// only a failed rank could match. Tag(rank, t) builds such a tag;
// receives name the sender with mask RankMask|their own bits, or leave
// the rank out (AnyRank) for a wildcard source.
//
// Under hydra a rank that dies ends the whole job unless mpiexec runs with
// -disable-auto-cleanup, and hydra 4.0 ends it anyway when the rank was
// killed by a signal: a fault-tolerant program (examples/ftallreduce)
// calls Supervise first and is started with -disable-auto-cleanup. Under Slurm, srun --mpi=pmi2 --kill-on-bad-exit=0 (the
// default unless configured otherwise) keeps the other tasks running.
package bootstrap
