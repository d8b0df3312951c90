/*
 * rxepeer: a remote-controlled RC queue pair on rdma-core's libibverbs, run
 * inside the rxe VM so that ucgo's RoCEv2 provider talks to the kernel's
 * rdma_rxe through unmodified rdma-core verbs.
 *
 *   rxepeer [-d DEV] [-g GIDIDX] [-p TCPPORT] [-s BUFSIZE] [-A ACCESS]
 *           [-r RECVS] [-W WAITSEC]
 *
 * It creates one PD, one MR of BUFSIZE bytes (ACCESS: bitmask of
 * ibv_access_flags, default local write | remote write | remote read |
 * remote atomic), send and receive CQs and one RC QP in INIT, posts RECVS
 * receives of 4096 bytes (or the buffer size if smaller), then accepts one
 * TCP connection on TCPPORT and serves one-line commands, each answered by
 * one line:
 *
 *   key                               -> key QPN PSN RKEY VADDR GID
 *   connect QPN PSN RKEY VADDR GID MTU TIMEOUT RETRY RNRRETRY MINRNR RDATOM
 *                                     -> ok | err TEXT    (RTR, then RTS)
 *   fill SEED                         -> ok   (buf[i] = pattern(i, SEED))
 *   set OFF HEX                       -> ok
 *   dump OFF LEN                      -> data HEX
 *   write|read LOFF ROFF LEN KEYXOR   -> wc STATUS NAME VENDOR OPCODE BYTELEN
 *   cas LOFF ROFF CMP SWAP KEYXOR     -> wc ... (old value lands in buf[LOFF:+8])
 *   fadd LOFF ROFF ADD KEYXOR         -> wc ...
 *   send LOFF LEN IMM                 -> wc ...   (IMM -1: no immediate)
 *   recv LOFF LEN                     -> ok       (posts one receive)
 *   waitrecv                          -> wc STATUS NAME VENDOR OPCODE BYTELEN IMM
 *   state                             -> state N
 *   async                             -> async none | async TYPE:NAME ...
 *   poweroff                          -> ok, then the VM powers off at once
 *   quit                              -> ok, exit 0
 *
 * KEYXOR is xor'ed into the remote key (0: the right key). Numbers are
 * hexadecimal except LOFF/ROFF/LEN/SEED/OFF/MTU/TIMEOUT/RETRY/RNRRETRY/
 * MINRNR/RDATOM (decimal). A wait for a completion gives up after WAITSEC
 * seconds and answers "timeout". Every command and answer is echoed on
 * stdout, prefixed "rxepeer:PORT".
 *
 * Build (host, Debian 12 like the VM image): gcc -O2 -o rxepeer rxepeer.c -libverbs
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static struct ibv_comp_channel *sch, *rch;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *qp;
static unsigned char *buf;
static size_t bufsize = 65536;
static int gidx = 1, tcpport = 18600, waitsec = 20, nrecv = 0;
static int access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
static union ibv_gid mygid;
static uint32_t mypsn, rkey_remote;
static uint64_t vaddr_remote;
static FILE *cin, *cout;
static uint64_t nextid = 1;

static void logf_(const char *fmt, ...)
{
	va_list ap;

	printf("rxepeer:%d ", tcpport);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void reply(const char *fmt, ...)
{
	char line[200000];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(cout, "%s\n", line);
	fflush(cout);
	if (strlen(line) > 200)
		logf_("> %.200s...", line);
	else
		logf_("> %s", line);
}

static unsigned char pattern(size_t i, unsigned seed)
{
	return (unsigned char)(i * 31 + seed + (i >> 8) * 7);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int parse_gid(const char *s, union ibv_gid *g)
{
	if (strlen(s) != 32)
		return -1;
	for (int i = 0; i < 16; i++) {
		int a = hexval(s[2 * i]), b = hexval(s[2 * i + 1]);
		if (a < 0 || b < 0)
			return -1;
		g->raw[i] = a << 4 | b;
	}
	return 0;
}

/* wait_wc waits for one completion on cq (through ch) for up to waitsec. */
static int wait_wc(struct ibv_cq *cq, struct ibv_comp_channel *ch, struct ibv_wc *wc)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
		if (ibv_req_notify_cq(cq, 0))
			return -1;
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long ms = waitsec * 1000L - ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L);
		if (ms <= 0)
			return 0;
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };
		int r = poll(&p, 1, (int)ms);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r > 0) {
			struct ibv_cq *ecq;
			void *ectx;
			if (ibv_get_cq_event(ch, &ecq, &ectx) == 0)
				ibv_ack_cq_events(ecq, 1);
		}
	}
}

static void reply_wc(struct ibv_cq *cq, struct ibv_comp_channel *ch, int recv)
{
	struct ibv_wc wc;
	int n = wait_wc(cq, ch, &wc);

	if (n == 0) {
		reply("timeout");
		return;
	}
	if (n < 0) {
		reply("err poll cq");
		return;
	}
	if (recv)
		reply("wc %d %s %u %d %u %d", wc.status, ibv_wc_status_str(wc.status), wc.vendor_err, wc.opcode,
		      wc.byte_len, (wc.wc_flags & IBV_WC_WITH_IMM) ? (int)ntohl(wc.imm_data) : -1);
	else
		reply("wc %d %s %u %d %u", wc.status, ibv_wc_status_str(wc.status), wc.vendor_err, wc.opcode,
		      wc.byte_len);
}

static int post_recv(size_t off, size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf + off, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = nextid++, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int do_connect(char *args)
{
	unsigned qpn, psn, rkey;
	unsigned long long vaddr;
	char gid[64];
	int mtu, timeout, retry, rnr, minrnr, rdatom;
	union ibv_gid dgid;

	if (sscanf(args, "%x %x %x %llx %63s %d %d %d %d %d %d", &qpn, &psn, &rkey, &vaddr, gid, &mtu, &timeout,
		   &retry, &rnr, &minrnr, &rdatom) != 11 || parse_gid(gid, &dgid)) {
		reply("err bad connect arguments");
		return -1;
	}
	enum ibv_mtu m;
	switch (mtu) {
	case 256: m = IBV_MTU_256; break;
	case 512: m = IBV_MTU_512; break;
	case 1024: m = IBV_MTU_1024; break;
	case 2048: m = IBV_MTU_2048; break;
	case 4096: m = IBV_MTU_4096; break;
	default: reply("err bad mtu %d", mtu); return -1;
	}
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = m,
		.dest_qp_num = qpn,
		.rq_psn = psn,
		.max_dest_rd_atomic = rdatom,
		.min_rnr_timer = minrnr,
		.ah_attr = {
			.is_global = 1,
			.grh = { .dgid = dgid, .sgid_index = gidx, .hop_limit = 1 },
			.port_num = 1,
		},
	};
	int err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err) {
		reply("err modify RTR: %s", strerror(err));
		return -1;
	}
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = rnr;
	a.sq_psn = mypsn;
	a.max_rd_atomic = rdatom;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (err) {
		reply("err modify RTS: %s", strerror(err));
		return -1;
	}
	rkey_remote = rkey;
	vaddr_remote = vaddr;
	reply("ok");
	return 0;
}

static void do_post(struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int err;

	wr->wr_id = nextid++;
	wr->send_flags |= IBV_SEND_SIGNALED;
	err = ibv_post_send(qp, wr, &bad);
	if (err) {
		reply("err post send: %s", strerror(err));
		return;
	}
	reply_wc(scq, sch, 0);
}

static int in_range(size_t off, size_t len)
{
	return off <= bufsize && len <= bufsize - off;
}

static void command(char *line)
{
	char cmd[32];
	int n = 0;
	size_t loff, roff, len;
	unsigned long long a1, a2;
	unsigned keyxor;

	if (sscanf(line, "%31s %n", cmd, &n) < 1) {
		reply("err empty");
		return;
	}
	char *args = line + n;
	if (!strcmp(cmd, "key")) {
		char g[33];
		for (int i = 0; i < 16; i++)
			sprintf(g + 2 * i, "%02x", mygid.raw[i]);
		reply("key %06x %06x %08x %016llx %s", qp->qp_num, mypsn, mr->rkey,
		      (unsigned long long)(uintptr_t)buf, g);
	} else if (!strcmp(cmd, "connect")) {
		do_connect(args);
	} else if (!strcmp(cmd, "fill")) {
		unsigned seed;
		if (sscanf(args, "%u", &seed) != 1) {
			reply("err fill SEED");
			return;
		}
		for (size_t i = 0; i < bufsize; i++)
			buf[i] = pattern(i, seed);
		reply("ok");
	} else if (!strcmp(cmd, "set")) {
		char hex[4096];
		if (sscanf(args, "%zu %4095s", &loff, hex) != 2 || strlen(hex) % 2 || !in_range(loff, strlen(hex) / 2)) {
			reply("err set OFF HEX");
			return;
		}
		for (size_t i = 0; i < strlen(hex) / 2; i++)
			buf[loff + i] = hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]);
		reply("ok");
	} else if (!strcmp(cmd, "dump")) {
		static char hex[2 * 65536 + 1];
		if (sscanf(args, "%zu %zu", &loff, &len) != 2 || !in_range(loff, len) || len > 65536) {
			reply("err dump OFF LEN (LEN <= 65536)");
			return;
		}
		for (size_t i = 0; i < len; i++)
			sprintf(hex + 2 * i, "%02x", buf[loff + i]);
		hex[2 * len] = 0;
		reply("data %s", hex);
	} else if (!strcmp(cmd, "write") || !strcmp(cmd, "read")) {
		if (sscanf(args, "%zu %zu %zu %x", &loff, &roff, &len, &keyxor) != 4 || !in_range(loff, len)) {
			reply("err %s LOFF ROFF LEN KEYXOR", cmd);
			return;
		}
		struct ibv_sge sge = { .addr = (uintptr_t)buf + loff, .length = len, .lkey = mr->lkey };
		struct ibv_send_wr wr = {
			.opcode = cmd[0] == 'w' ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
			.sg_list = &sge,
			.num_sge = 1,
			.wr.rdma = { .remote_addr = vaddr_remote + roff, .rkey = rkey_remote ^ keyxor },
		};
		do_post(&wr);
	} else if (!strcmp(cmd, "cas") || !strcmp(cmd, "fadd")) {
		int cas = cmd[0] == 'c';
		int k = cas ? sscanf(args, "%zu %zu %llx %llx %x", &loff, &roff, &a1, &a2, &keyxor)
			    : sscanf(args, "%zu %zu %llx %x", &loff, &roff, &a1, &keyxor);
		if (k != (cas ? 5 : 4) || !in_range(loff, 8)) {
			reply("err %s arguments", cmd);
			return;
		}
		struct ibv_sge sge = { .addr = (uintptr_t)buf + loff, .length = 8, .lkey = mr->lkey };
		struct ibv_send_wr wr = {
			.opcode = cas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD,
			.sg_list = &sge,
			.num_sge = 1,
			.wr.atomic = { .remote_addr = vaddr_remote + roff, .rkey = rkey_remote ^ keyxor,
				       .compare_add = a1, .swap = cas ? a2 : 0 },
		};
		do_post(&wr);
	} else if (!strcmp(cmd, "send")) {
		long long imm;
		if (sscanf(args, "%zu %zu %lld", &loff, &len, &imm) != 3 || !in_range(loff, len)) {
			reply("err send LOFF LEN IMM");
			return;
		}
		struct ibv_sge sge = { .addr = (uintptr_t)buf + loff, .length = len, .lkey = mr->lkey };
		struct ibv_send_wr wr = {
			.opcode = imm < 0 ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM,
			.sg_list = &sge,
			.num_sge = 1,
			.imm_data = htonl((uint32_t)imm),
		};
		do_post(&wr);
	} else if (!strcmp(cmd, "recv")) {
		if (sscanf(args, "%zu %zu", &loff, &len) != 2 || !in_range(loff, len)) {
			reply("err recv LOFF LEN");
			return;
		}
		int err = post_recv(loff, len);
		if (err)
			reply("err post recv: %s", strerror(err));
		else
			reply("ok");
	} else if (!strcmp(cmd, "waitrecv")) {
		reply_wc(rcq, rch, 1);
	} else if (!strcmp(cmd, "state")) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
			reply("err query qp");
		else
			reply("state %d", a.qp_state);
	} else if (!strcmp(cmd, "async")) {
		char out[1024] = "async";
		int any = 0;
		struct ibv_async_event ev;
		while (ibv_get_async_event(ctx, &ev) == 0) {
			size_t l = strlen(out);
			snprintf(out + l, sizeof out - l, " %d:%s", ev.event_type, ibv_event_type_str(ev.event_type));
			for (char *c = out + l + 1; *c; c++)
				if (*c == ' ')
					*c = '_';
			ibv_ack_async_event(&ev);
			any = 1;
		}
		reply("%s", any ? out : "async none");
	} else if (!strcmp(cmd, "poweroff")) {
		reply("ok");
		logf_("powering off");
		sync();
		reboot(RB_POWER_OFF);
	} else if (!strcmp(cmd, "quit")) {
		reply("ok");
		exit(0);
	} else {
		reply("err unknown command %s", cmd);
	}
}

int main(int argc, char **argv)
{
	const char *devname = "rxe0";
	int c;

	while ((c = getopt(argc, argv, "d:g:p:s:A:r:W:")) != -1) {
		switch (c) {
		case 'd': devname = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'p': tcpport = atoi(optarg); break;
		case 's': bufsize = strtoul(optarg, NULL, 0); break;
		case 'A': access_flags = strtol(optarg, NULL, 0); break;
		case 'r': nrecv = atoi(optarg); break;
		case 'W': waitsec = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: rxepeer [-d DEV] [-g GIDIDX] [-p PORT] [-s SIZE] [-A ACCESS] [-r RECVS] [-W SEC]\n");
			return 2;
		}
	}
	srand48(getpid() * time(NULL));
	mypsn = lrand48() & 0xffffff;

	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), devname))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "rxepeer: no device %s\n", devname);
		return 1;
	}
	ctx = ibv_open_device(dev);
	if (!ctx || ibv_query_gid(ctx, 1, gidx, &mygid)) {
		fprintf(stderr, "rxepeer: open %s / gid %d failed\n", devname, gidx);
		return 1;
	}
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	pd = ibv_alloc_pd(ctx);
	if (posix_memalign((void **)&buf, 4096, bufsize ? bufsize : 1))
		return 1;
	memset(buf, 0, bufsize);
	mr = pd ? ibv_reg_mr(pd, buf, bufsize, access_flags) : NULL;
	sch = ibv_create_comp_channel(ctx);
	rch = ibv_create_comp_channel(ctx);
	scq = sch ? ibv_create_cq(ctx, 256, NULL, sch, 0) : NULL;
	rcq = rch ? ibv_create_cq(ctx, 256, NULL, rch, 0) : NULL;
	if (!mr || !scq || !rcq) {
		fprintf(stderr, "rxepeer: pd/mr/cq setup failed: %s\n", strerror(errno));
		return 1;
	}
	struct ibv_qp_init_attr ia = {
		.send_cq = scq,
		.recv_cq = rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 128, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	qp = ibv_create_qp(pd, &ia);
	if (!qp) {
		fprintf(stderr, "rxepeer: create qp: %s\n", strerror(errno));
		return 1;
	}
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = access_flags & ~IBV_ACCESS_LOCAL_WRITE,
	};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		fprintf(stderr, "rxepeer: modify INIT failed\n");
		return 1;
	}
	for (int i = 0; i < nrecv; i++)
		if (post_recv(0, bufsize < 4096 ? bufsize : 4096)) {
			fprintf(stderr, "rxepeer: post recv failed\n");
			return 1;
		}

	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(tcpport) };
	if (bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 1)) {
		perror("rxepeer: listen");
		return 1;
	}
	logf_("listening qpn 0x%06x rkey 0x%08x size %zu recvs %d", qp->qp_num, mr->rkey, bufsize, nrecv);
	int fd = accept(ls, NULL, NULL);
	close(ls);
	if (fd < 0) {
		perror("rxepeer: accept");
		return 1;
	}
	cin = fdopen(fd, "r");
	cout = fdopen(dup(fd), "w");
	static char line[16384];
	while (fgets(line, sizeof line, cin)) {
		line[strcspn(line, "\r\n")] = 0;
		logf_("< %s", line);
		command(line);
	}
	logf_("control connection closed");
	return 0;
}
