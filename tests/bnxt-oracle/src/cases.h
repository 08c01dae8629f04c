/* The oracle's cases, in order (included by harness.c). Every post is followed, sooner or
 * later, by the completion entries that retire it, so the rings wrap. */

static void setup_qps(void)
{
	make_qp(&rc, "rc", IBV_QPT_RC, 0, 64, NULL);
	make_qp(&uc, "uc", IBV_QPT_UC, 0, 64, NULL);
	make_qp(&ud, "ud", IBV_QPT_UD, 1, 64, NULL);
	make_qp(&rst, "rst", IBV_QPT_RC, 0, 0, NULL);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 7, .max_sge = 2 } };
	srq = ibv_create_srq(pd, &sa); if (!srq) die("ibv_create_srq");
	struct shim_state *S = shim_state();
	buf_init(&srqb, (void *)S->srq[0].va);
	fprintf(out, "{\"ev\":\"srq\",\"max_wr\":7,\"max_sge\":2,\"srqid\":%u,\"bytes\":%zu}\n", S->srq[0].id, srqb.len);
	make_qp(&rcs, "rcs", IBV_QPT_RC, 0, 0, srq);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64, .dgid.raw = { 0xfe, 0x80, [15] = 1 } } };
	ah = ibv_create_ah(pd, &aa); if (!ah) die("ibv_create_ah");
	avid = *(uint32_t *)((char *)S->shpg + 0x10);
	fprintf(out, "{\"ev\":\"ah\",\"avid\":%u}\n", avid);
	rc.psn = 0x123456; uc.psn = 0x10; ud.psn = 0x20; rcs.psn = 0xfffffe;
	to_rts(&rc); to_rts(&uc); to_rts(&ud); to_rts(&rcs);
}

/* every send kind perftest and qperf post, on RC */
static void rc_kinds(void)
{
	struct ibv_sge s1 = sge(0, 100), s2[2] = { sge(0x100, 64), sge(0x200, 32) }, si = sge(0x40, 20), s64 = sge(0x300, 64);
	struct ibv_sge srd = sge(0x1000, 4096), sat = sge(0x2000, 8), sat2 = sge(0x2008, 8);
	struct ibv_send_wr w = swr(1, IBV_WR_SEND, &s1, 1, IBV_SEND_SIGNALED); post_send(&rc, &w, 1);
	w = swr(2, IBV_WR_SEND_WITH_IMM, &s1, 1, IBV_SEND_SIGNALED); post_send(&rc, &w, 1);
	w = swr(3, IBV_WR_SEND, &si, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE); post_send(&rc, &w, 1);
	w = swr(4, IBV_WR_RDMA_WRITE, s2, 2, 0); post_send(&rc, &w, 1);
	w = swr(5, IBV_WR_RDMA_WRITE_WITH_IMM, s2, 2, IBV_SEND_SIGNALED); post_send(&rc, &w, 1);
	w = swr(6, IBV_WR_RDMA_WRITE, &s64, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE); post_send(&rc, &w, 1);
	w = swr(7, IBV_WR_RDMA_READ, &srd, 1, IBV_SEND_SIGNALED); post_send(&rc, &w, 1);
	w = swr(8, IBV_WR_ATOMIC_CMP_AND_SWP, &sat, 1, IBV_SEND_SIGNALED);
	w.wr.atomic = (typeof(w.wr.atomic)){ 0x7f0000008000ULL, 0x1111222233334444ULL, 0x5555666677778888ULL, 0xa70 };
	post_send(&rc, &w, 1);
	w = swr(9, IBV_WR_ATOMIC_FETCH_AND_ADD, &sat2, 1, IBV_SEND_SIGNALED);
	w.wr.atomic = (typeof(w.wr.atomic)){ 0x7f0000008008ULL, 3, 0x9999, 0xa70 };
	post_send(&rc, &w, 1);
	w = swr(10, IBV_WR_SEND, NULL, 0, IBV_SEND_FENCE | IBV_SEND_SOLICITED); post_send(&rc, &w, 1);
	send_ok(&rc); poll(16);
	struct ibv_send_wr l[3] = { swr(11, IBV_WR_RDMA_WRITE, &s1, 1, 0), swr(12, IBV_WR_RDMA_WRITE, &s1, 1, 0),
				    swr(13, IBV_WR_RDMA_WRITE, &s1, 1, IBV_SEND_SIGNALED) };
	post_send(&rc, l, 3);
	send_ok(&rc); poll(2); poll(2);
}

static void uc_ud_kinds(void)
{
	struct ibv_sge s1 = sge(0x500, 256), si = sge(0x40, 48);
	struct ibv_send_wr w = swr(20, IBV_WR_SEND, &s1, 1, IBV_SEND_SIGNALED); post_send(&uc, &w, 1);
	w = swr(21, IBV_WR_RDMA_WRITE_WITH_IMM, &s1, 1, IBV_SEND_SIGNALED); post_send(&uc, &w, 1);
	send_ok(&uc); poll(4);
	w = swr(30, IBV_WR_SEND, &s1, 1, 0); w.wr.ud = (typeof(w.wr.ud)){ ah, 0xabcd, 0x11111111 }; post_send(&ud, &w, 1);
	w = swr(31, IBV_WR_SEND_WITH_IMM, &si, 1, IBV_SEND_INLINE); w.wr.ud = (typeof(w.wr.ud)){ ah, 0x12, 0x22222222 };
	post_send(&ud, &w, 1);
	w = swr(32, IBV_WR_RDMA_WRITE, &s1, 1, 0); w.wr.ud = (typeof(w.wr.ud)){ ah, 0x12, 0x22222222 }; post_send(&ud, &w, 1);
	send_ok(&ud); poll(4);
	w = swr(40, IBV_WR_SEND, &s1, 1, 0); post_send(&rst, &w, 1);
}

static void receives(void)
{
	struct ibv_sge s1 = sge(0x8000, 1024), s2[2] = { sge(0x9000, 512), sge(0xa000, 512) };
	struct ibv_recv_wr r[3] = { { .wr_id = 100, .sg_list = &s1, .num_sge = 1 }, { .wr_id = 101, .sg_list = s2, .num_sge = 2 },
				    { .wr_id = 102, .sg_list = NULL, .num_sge = 0 } };
	post_recv(&rc, r, 3);
	cqe(&rc, K_RC, 0, 0, 100, 0, 0, 0);
	cqe(&rc, K_RC, 0, 0x2, 7, 0x44332211, 0, 0);
	cqe(&rc, K_RC, 0, 0x2 | 0x8, 0, 0x01020304, 0, 0);
	poll(8);
	struct ibv_recv_wr u = { .wr_id = 110, .sg_list = &s1, .num_sge = 1 };
	post_recv(&ud, &u, 1);
	cqe(&ud, K_UD, 0, 0, 64, 0, 0xbeefULL << 48 | 0x0a0b0c0d0e0fULL, 0x00000000);
	poll(4);
	struct ibv_recv_wr sr[2] = { { .wr_id = 120, .sg_list = &s1, .num_sge = 1 }, { .wr_id = 121, .sg_list = s2, .num_sge = 2 } };
	post_recv(NULL, sr, 2);
	cqe(&rcs, K_RC, 0, 0x1, 33, 0, 0, 1);
	cqe(&rcs, K_RC, 0, 0x1 | 0x2, 44, 0x55, 0, 0);
	poll(4);
	post_recv(NULL, sr, 1);
	post_recv(&rst, &u, 1);
}

static void arming(void)
{
	ibv_req_notify_cq(cq, 0); fprintf(out, "{\"ev\":\"arm\",\"solicited\":0"); dbs(); fprintf(out, "}\n");
	poll(1);
	ibv_req_notify_cq(cq, 1); fprintf(out, "{\"ev\":\"arm\",\"solicited\":1"); dbs(); fprintf(out, "}\n");
	poll(1);
}

/* every requester status, every responder status, terminal, stale and skipped entries */
static void errors(void)
{
	struct ibv_sge s1 = sge(0, 64);
	for (int st = 1; st <= 0x0c; st++) {
		struct ibv_send_wr l[2] = { swr(200 + st, IBV_WR_RDMA_WRITE, &s1, 1, IBV_SEND_SIGNALED), swr(300 + st, IBV_WR_SEND, &s1, 1, 0) };
		post_send(&rc, l, 2);
		cqe(&rc, K_SEND, st, 0, rc.posted - 1, 0, 0, 0);
		poll(4);
		to_rts(&rc);
	}
	for (int st = 1; st <= 0x0a; st++) {
		struct ibv_recv_wr r[2] = { { .wr_id = 400 + st, .sg_list = &s1, .num_sge = 1 }, { .wr_id = 500 + st, .sg_list = &s1, .num_sge = 1 } };
		post_recv(&rc, r, 2);
		cqe(&rc, K_RC, st, 0, 0, 0, 0, 0);
		poll(4); poll(4);
		to_rts(&rc);
	}
	struct ibv_recv_wr sr = { .wr_id = 600, .sg_list = &s1, .num_sge = 1 };
	post_recv(NULL, &sr, 1);
	cqe(&rcs, K_RC, 2, 0x1, 0, 0, 0, 2);
	poll(4);
	struct ibv_send_wr w = swr(700, IBV_WR_SEND, &s1, 1, IBV_SEND_SIGNALED); post_send(&uc, &w, 1);
	cqe(&uc, K_TERM, 0, 0, 0, 0, 0, 0);
	poll(4);
	cqe(NULL, K_SEND, 0, 0, 0, 0, 0, 0);
	cqe(&rc, K_COFF, 0, 0, 0, 0, 0, 0);
	cqe(&rc, K_RAW, 0, 0, 0, 0, 0, 0);
	poll(4);
}

/* enough traffic for every ring (SQ, CQ) to wrap several times */
static void wrap(void)
{
	struct ibv_sge s1 = sge(0x40, 40);
	for (int round = 0; round < 40; round++) {
		for (int i = 0; i < 8; i++) {
			struct ibv_send_wr w = swr(1000 + round * 8 + i, i == 3 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, &s1, 1, i == 5 ? IBV_SEND_INLINE : 0);
			w.wr.ud = (typeof(w.wr.ud)){ ah, 0x12, 0x22222222 };
			post_send(&ud, &w, 1);
		}
		send_ok(&ud); poll(4); poll(8);
	}
}

static void run_cases(void)
{
	setup_qps();
	rc_kinds();
	uc_ud_kinds();
	receives();
	arming();
	errors();
	wrap();
}

/* ---------- the differential run: a random sequence of calls and device answers ---------- */

static uint64_t rng;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* what the harness knows is outstanding, so it writes completions only for posted requests
 * (libbnxt_re trusts the device there: an entry for an empty queue retires garbage) */
static uint32_t sends_out[3], recvs_out[3];

static struct ibv_send_wr random_send(struct q *q, uint64_t id, struct ibv_sge *s)
{
	static const enum ibv_wr_opcode rc_ops[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD };
	enum ibv_wr_opcode op = q->type == IBV_QPT_UD ? rc_ops[rnd(2)] : q->type == IBV_QPT_UC ? rc_ops[rnd(4)] : rc_ops[rnd(7)];
	int atomic = op >= IBV_WR_ATOMIC_CMP_AND_SWP, nsge = atomic ? 1 : (int)rnd(3);
	unsigned flags = (rnd(2) ? IBV_SEND_SIGNALED : 0) | (rnd(8) == 0 ? IBV_SEND_FENCE : 0) | (rnd(8) == 0 ? IBV_SEND_SOLICITED : 0);
	uint32_t total = 0;
	for (int i = 0; i < nsge; i++) {
		s[i] = sge(rnd(DATA_LEN / 2) & ~7u, atomic ? 8 : 1 + rnd(i ? 64 : 5000));
		total += s[i].length;
	}
	/* inline only where libbnxt_re lays it out right (docs/providers.md): one SGE; in variable
	 * mode at most one slot, since it copies a longer payload straight past the ring's end
	 * (into the PSN area) where a WQE wraps */
	uint32_t max_inl = getenv("SHIM_MODE") ? 16 : 64;
	if (!atomic && op != IBV_WR_RDMA_READ && nsge <= 1 && total <= max_inl && rnd(3) == 0) flags |= IBV_SEND_INLINE;
	struct ibv_send_wr w = swr(id, op, s, nsge, flags);
	if (atomic) w.wr.atomic = (typeof(w.wr.atomic)){ 0x7f0000000000ULL + rnd(1 << 20) * 8, rng, rng >> 3, rnd(1 << 20) };
	if (q->type == IBV_QPT_UD) w.wr.ud = (typeof(w.wr.ud)){ ah, rnd(1 << 24), rnd(0xffffffff) };
	return w;
}

/* drain q after an error: complete what is still outstanding, flush, back to RTS */
static void recover(struct q *q, int i)
{
	if (sends_out[i]) send_ok(q);
	/* every queue empty before the reset: libbnxt_re zeroes the ring indices but keeps its
	 * software entries, so a reset with requests outstanding leaves them out of step */
	for (int k = 0; k < 4 && poll(16) == 16; k++)
		;
	to_rts(q);
	sends_out[i] = recvs_out[i] = 0;
}

static void random_step(uint64_t *id)
{
	struct q *qs[3] = { &rc, &uc, &ud };
	int i = rnd(3); struct q *q = qs[i];
	struct ibv_sge s[8][2];
	switch (rnd(8)) {
	case 0: case 1: case 2: {
		int n = 1 + rnd(3); struct ibv_send_wr w[3];
		for (int k = 0; k < n; k++) w[k] = random_send(q, (*id)++, s[k]);
		uint32_t before = q->posted;
		post_send(q, w, n);
		sends_out[i] += q->posted - before;
		break; }
	case 3: {
		int n = 1 + rnd(2); struct ibv_recv_wr r[2];
		for (int k = 0; k < n; k++) {
			int nsge = rnd(3);
			for (int j = 0; j < nsge; j++) s[k][j] = sge(rnd(DATA_LEN / 2), 1 + rnd(4096));
			r[k] = (struct ibv_recv_wr){ .wr_id = (*id)++, .sg_list = s[k], .num_sge = nsge };
		}
		int before = recvs_out[i];
		post_recv(q, r, n);
		/* the harness cannot see how many were taken: a post fails only on a full queue here */
		recvs_out[i] = before + n > 8 ? 8 : before + n;
		break; }
	case 4: case 5:
		if (sends_out[i]) {
			static const int req_err[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xc }; /* not 0xb: WR_FLUSH */
			int st = rnd(10) == 0 ? req_err[rnd(11)] : 0;
			cqe(q, K_SEND, st, 0, st ? q->posted - sends_out[i] + 1 : q->posted, 0, 0, 0);
			/* an error entry retires the oldest request only; the rest are flushed */
			if (st) { sends_out[i]--; poll(4); recover(q, i); } else sends_out[i] = 0;
		}
		break;
	case 6:
		if (recvs_out[i] && q->type != IBV_QPT_UC) {
			static const int rsp_err[] = { 1, 2, 3, 4, 5, 6, 8, 9 }; /* not 7: WR_FLUSH */
			int st = rnd(10) == 0 ? rsp_err[rnd(8)] : 0;
			int flags = rnd(2) ? 0x2 | (rnd(2) ? 0x8 : 0) : 0;
			uint64_t src = (uint64_t)rnd(1 << 16) << 48;
			cqe(q, q->type == IBV_QPT_UD ? K_UD : K_RC, st, flags, rnd(5000), rnd(0xffffffff), src, 0);
			recvs_out[i]--;
			if (st) { poll(4); recover(q, i); }
		}
		break;
	default:
		if (rnd(8) == 0) {
			int se = rnd(2);
			ibv_req_notify_cq(cq, se); fprintf(out, "{\"ev\":\"arm\",\"solicited\":%d", se); dbs(); fprintf(out, "}\n");
		}
		poll(1 + rnd(16));
	}
}

/* a software flush completion retires a request the harness still counted */
static void count_flush(const struct ibv_wc *w)
{
	struct q *qs[3] = { &rc, &uc, &ud };
	for (int i = 0; i < 3; i++) {
		if (w->status != IBV_WC_WR_FLUSH_ERR || w->qp_num != qs[i]->qp->qp_num) continue;
		if (w->opcode & IBV_WC_RECV) { if (recvs_out[i]) recvs_out[i]--; }
		else if (sends_out[i]) sends_out[i]--;
	}
}

static void run_random(uint64_t seed, int steps)
{
	rng = seed * 0x9e3779b97f4a7c15ULL + 1;
	on_wc = count_flush;
	setup_qps();
	uint64_t id = 1;
	for (int k = 0; k < steps; k++) random_step(&id);
}
