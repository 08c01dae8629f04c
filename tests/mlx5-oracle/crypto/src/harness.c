/* mlx5 crypto oracle harness: drives Debian's libibverbs/libmlx5 (rdma-core 44) through perftest
 * 6.06's --aes_xts sequence against the fake kernel (shim.c + devx.c) and dumps, per post, the UMR
 * (mkey configure + crypto BSF) WQE and the following data WQE, the SQ counters and the doorbell /
 * BlueFlame stores, as JSON lines. Own code; uses only the public verbs / mlx5dv API.
 *
 * usage: mlx5cryptooracle OUTDIR [VARIANT]   (VARIANT labels the output files; the crypto engine
 * the fake device reports comes from SHIM_CRYPTO_ENGINES, read by devx.c) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <errno.h>
#include <endian.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include "shim.h"

#define DATA_VA 0x200000000ULL
#define REMOTE_VA 0x00007f0012340000ULL
#define RKEY 0x0000abcdU
#define TX_DEPTH 128            /* perftest bw default; --aes_xts QPs get max_send_wr = 2 * tx_depth */
#define AES_XTS_INLINE 512      /* perftest's max_inline_data for --aes_xts QPs */
#define BUFF_SIZE 8192          /* perftest buff_size for -s <= 4096, 1 QP: max(size, 4096 cycle) * 2 */
#define MSG_SIZE 64
#define NUM_DEKS 2              /* as with --data_enc_keys_number=2: DEKs rotate per post */

static FILE *fu, *fx, *fc;
static const char *variant = "multi_block";
static struct shim_state *S;
static struct shim_qp *Q; static struct shim_cq *C;
static struct ibv_qp *qp; static struct ibv_qp_ex *qpx; static struct mlx5dv_qp_ex *dvqp;
static struct ibv_cq *cq; static struct ibv_mr *mr; static struct mlx5dv_mkey *mkey;
static struct mlx5dv_dek *dek[NUM_DEKS]; static uint32_t dek_id[NUM_DEKS];
static uint32_t ci, dek_number; static uint64_t wrid = 0x1000;

static void hex(FILE *f, const void *p, size_t n)
{ const uint8_t *b = p; fputc('"', f); for (size_t i = 0; i < n; i++) fprintf(f, "%02x", b[i]); fputc('"', f); }
static uint32_t be32at(uint64_t a, int i) { return be32toh(((volatile uint32_t *)(uintptr_t)a)[i]); }
static uint8_t *sq_base(void) { return (uint8_t *)(uintptr_t)Q->buf_addr + ((size_t)Q->rq_wqe_count << Q->rq_wqe_shift); }
static uint32_t sq_counter(void) { return be32at(Q->db_addr, 1) & 0xffff; }

static void dump_uar_events(FILE *f)
{
	fprintf(f, "\"uar_writes\":[");
	for (int i = 0; i < S->nev; i++) {
		struct shim_write_ev *e = &S->ev[i];
		fprintf(f, "%s{\"uar_page\":%u,\"mmap_offset\":%lu,\"offset\":%lu,\"bytes\":", i ? "," : "", e->uar_page,
			(unsigned long)S->uar[e->uar_page].offset, (unsigned long)e->uar_off);
		hex(f, e->bytes, 8); fprintf(f, "}");
	}
	fprintf(f, "]");
}

/* one ibv_wr_start..ibv_wr_complete span: the WQEBBs it wrote, the meaningful WQE bytes, dbrec, UAR stores */
static void dump_span(FILE *f, uint32_t before, uint32_t after, int rc)
{
	uint32_t cnt = Q->sq_wqe_count;
	fprintf(f, "{\"rc\":%d,\"sq_cur_post_before\":%u,\"sq_cur_post_after\":%u,\"start_slot\":%u,\"wqebb_count\":%u,\"wqebbs\":[",
		rc, before, after, before & (cnt - 1), (uint16_t)(after - before));
	static uint8_t all[64 * 64]; size_t nall = 0;
	for (uint32_t i = before; (uint16_t)(i - after) != 0; i = (i + 1) & 0xffff) {
		uint8_t *bb = sq_base() + ((i & (cnt - 1)) << 6);
		fprintf(f, "%s{\"slot\":%u,\"bytes\":", i == before ? "" : ",", i & (cnt - 1)); hex(f, bb, 64); fprintf(f, "}");
		if (nall + 64 <= sizeof all) { memcpy(all + nall, bb, 64); nall += 64; }
	}
	fprintf(f, "]");
	if (nall >= 16) {
		unsigned ds = all[7] & 0x3f;
		fprintf(f, ",\"ctrl_opmod_idx_opcode\":"); hex(f, all, 4);
		fprintf(f, ",\"qpn_ds\":"); hex(f, all + 4, 4);
		fprintf(f, ",\"ds\":%u,\"wqe_bytes\":", ds); hex(f, all, ds * 16 <= nall ? ds * 16 : nall);
	}
	fprintf(f, ",\"qp_dbrec\":"); hex(f, (void *)(uintptr_t)Q->db_addr, 8); fprintf(f, ",");
	dump_uar_events(f); fprintf(f, "}");
}

static void *cqe_slot(uint32_t n) { return (uint8_t *)(uintptr_t)C->buf_addr + (size_t)(n & (C->ncqe - 1)) * C->cqe_size + (C->cqe_size == 128 ? 64 : 0); }
/* write a requester CQE for the WQE at wqe_counter and poll it (frees the SQ space up to it) */
static int complete(uint8_t mlx5_op, uint16_t wqe_counter, int *status)
{
	uint8_t c[64] = {0}; struct mlx5_cqe64 *q = (void *)c;
	q->srqn_uidx = htobe32(Q->uidx); q->sop_drop_qpn = htobe32(((uint32_t)mlx5_op << 24) | Q->qpn);
	q->wqe_counter = htobe16(wqe_counter); q->op_own = (MLX5_CQE_REQ << 4) | ((ci & C->ncqe) ? 1 : 0);
	uint8_t *slot = cqe_slot(ci); memcpy(slot, c, 63); __sync_synchronize(); slot[63] = c[63];
	struct ibv_wc wc; memset(&wc, 0, sizeof wc);
	int n = ibv_poll_cq(cq, 1, &wc);
	if (n > 0) ci += n;
	*status = n > 0 ? (int)wc.status : -1;
	return n;
}

enum data_op { D_WRITE, D_SEND, D_READ };
struct enc_case {
	const char *name; int encrypt_on_tx, sig_before; enum mlx5dv_block_size dus; enum data_op op;
	uint32_t layout_len; /* 0 = BUFF_SIZE */
};
static const int dus_bytes[] = { 512, 520, 4048, 4096, 4160 };
static const char *sig_order_name(int before) { return before ? "SIGNATURE_BEFORE_CRYPTO_ON_TX" : "SIGNATURE_AFTER_CRYPTO_ON_TX"; }

/* perftest 6.06 _new_post_send(enc = 1) for one RC QP: UMR span, then the data span */
static int post_enc(const struct enc_case *k, int record)
{
	struct mlx5dv_crypto_attr ca; memset(&ca, 0, sizeof ca);
	struct mlx5dv_mkey_conf_attr mattr; memset(&mattr, 0, sizeof mattr);
	struct ibv_sge sgl = { .addr = DATA_VA, .length = k->layout_len ? k->layout_len : BUFF_SIZE, .lkey = mr->lkey };
	uint32_t access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	unsigned di = dek_number % NUM_DEKS;

	if (record) { shim_uar_fill(0xa5); shim_ev_reset(); }
	uint32_t b0 = sq_counter();
	ibv_wr_start(qpx);
	qpx->wr_flags = IBV_SEND_INLINE;
	ca.crypto_standard = MLX5DV_CRYPTO_STANDARD_AES_XTS;
	mlx5dv_wr_mkey_configure(dvqp, mkey, 3, &mattr);
	mlx5dv_wr_set_mkey_access_flags(dvqp, access);
	mlx5dv_wr_set_mkey_layout_list(dvqp, 1, &sgl);
	ca.signature_crypto_order = k->sig_before ? MLX5DV_SIGNATURE_CRYPTO_ORDER_SIGNATURE_BEFORE_CRYPTO_ON_TX
						  : MLX5DV_SIGNATURE_CRYPTO_ORDER_SIGNATURE_AFTER_CRYPTO_ON_TX;
	ca.encrypt_on_tx = k->encrypt_on_tx ? true : false;
	for (int i = 0; i < 16; i++) ca.initial_tweak[i] = (char)i;
	for (int i = 0; i < 8; i++) ca.keytag[i] = 0;
	ca.data_unit_size = k->dus;
	ca.dek = dek[di];
	dek_number++;
	mlx5dv_wr_set_mkey_crypto(dvqp, &ca);
	int rc0 = ibv_wr_complete(qpx);
	uint32_t a0 = sq_counter();
	if (record) {
		fprintf(fu, "{\"variant\":\"%s\",\"name\":\"%s\",\"params\":{\"encrypt_on_tx\":%d,\"signature_crypto_order\":\"%s\",\"data_unit_size\":%d,\"data_unit_size_enum\":%d,"
			"\"dek_index\":%u,\"dek_obj_id\":\"0x%x\",\"mkey_lkey\":\"0x%x\",\"access_flags\":%u,\"layout_sge\":{\"addr\":\"0x%llx\",\"length\":%u,\"lkey\":\"0x%x\"},"
			"\"initial_tweak\":", variant, k->name, k->encrypt_on_tx, sig_order_name(k->sig_before), dus_bytes[k->dus], (int)k->dus,
			di, dek_id[di], mkey->lkey, access, (unsigned long long)sgl.addr, sgl.length, sgl.lkey);
		hex(fu, ca.initial_tweak, 16); fprintf(fu, ",\"keytag\":"); hex(fu, ca.keytag, 8);
		fprintf(fu, ",\"umr_wr_flags\":%u},\"umr\":", IBV_SEND_INLINE);
		dump_span(fu, b0, a0, rc0);
		shim_uar_fill(0xa5); shim_ev_reset();
	}
	if (rc0) { if (record) fprintf(fu, ",\"data\":null}\n"); return rc0; }

	uint32_t b1 = sq_counter();
	uint64_t id = wrid++;
	ibv_wr_start(qpx);
	qpx->wr_id = id;
	qpx->wr_flags = IBV_SEND_SIGNALED; /* perftest: wr->send_flags (0 here) | IBV_SEND_SIGNALED */
	uint8_t mop; const char *opn;
	switch (k->op) {
	case D_SEND: ibv_wr_send(qpx); mop = 0x0a; opn = "SEND"; break;
	case D_READ: ibv_wr_rdma_read(qpx, RKEY, REMOTE_VA); mop = 0x10; opn = "RDMA_READ"; break;
	default: ibv_wr_rdma_write(qpx, RKEY, REMOTE_VA); mop = 0x08; opn = "RDMA_WRITE"; break;
	}
	ibv_wr_set_sge(qpx, mkey->lkey, 0, MSG_SIZE);
	int rc1 = ibv_wr_complete(qpx);
	uint32_t a1 = sq_counter();
	if (record) {
		fprintf(fu, ",\"data_wr\":{\"wr_id\":%llu,\"opcode\":\"%s\",\"wr_flags\":%u,\"rkey\":\"0x%x\",\"remote_addr\":\"0x%llx\",\"sge\":{\"lkey\":\"0x%x\",\"addr\":\"0x0\",\"length\":%u}},\"data\":",
			(unsigned long long)id, opn, IBV_SEND_SIGNALED, k->op == D_SEND ? 0 : RKEY, k->op == D_SEND ? 0ULL : (unsigned long long)REMOTE_VA, mkey->lkey, MSG_SIZE);
		dump_span(fu, b1, a1, rc1);
	}
	int st = -2;
	if (!rc1) complete(mop, (uint16_t)b1, &st);
	if (record) fprintf(fu, ",\"completion_status\":%d}\n", st);
	fflush(fu);
	return rc1;
}

/* a plain 1-WQEBB signaled RDMA write (lkey sge): moves the SQ head without recording */
static void fill_write(void)
{
	uint32_t b = sq_counter(); int st;
	ibv_wr_start(qpx); qpx->wr_id = wrid++; qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, RKEY, REMOTE_VA); ibv_wr_set_sge(qpx, mr->lkey, DATA_VA, MSG_SIZE);
	if (ibv_wr_complete(qpx)) { fprintf(stderr, "fill_write failed\n"); exit(1); }
	complete(0x08, (uint16_t)b, &st);
}
static void move_head_to(uint32_t slot)
{
	shim_trap_enable(0);
	for (int guard = 0; guard < 70000 && (sq_counter() & (Q->sq_wqe_count - 1)) != slot; guard++) fill_write();
	shim_trap_enable(1);
}

int main(int argc, char **argv)
{
	const char *outdir = argc > 1 ? argv[1] : ".";
	if (argc > 2) variant = argv[2];
	char p[512];
	snprintf(p, sizeof p, "%s/umr_wqe_%s.jsonl", outdir, variant); fu = fopen(p, "w");
	snprintf(p, sizeof p, "%s/setup_%s.json", outdir, variant); fx = fopen(p, "w");
	fc = stderr;
	if (!fu || !fx) { perror("output"); return 1; }
	S = shim_state();
	uint8_t *data = mmap((void *)DATA_VA, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (data != (void *)DATA_VA) { perror("mmap data"); return 1; }
	for (int i = 0; i < (1 << 20); i++) data[i] = (uint8_t)(i * 7 + 3);

	int n; struct ibv_device **l = ibv_get_device_list(&n);
	if (!n) { fprintf(stderr, "no device\n"); return 1; }
	shim_devx_label("mlx5dv_open_device(DEVX)");
	struct mlx5dv_context_attr oattr = { .flags = MLX5DV_CONTEXT_FLAGS_DEVX };
	struct ibv_context *ctx = mlx5dv_open_device(l[0], &oattr);
	if (!ctx) { perror("mlx5dv_open_device"); return 1; }
	shim_devx_label("mlx5dv_query_device(CRYPTO_OFFLOAD)");
	struct mlx5dv_context dvc; memset(&dvc, 0, sizeof dvc); dvc.comp_mask = MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD;
	int qrc = mlx5dv_query_device(ctx, &dvc);

	shim_devx_label("mlx5dv_crypto_login");
	struct mlx5dv_crypto_login_attr la; memset(&la, 0, sizeof la);
	for (int i = 0; i < 48; i++) la.credential[i] = (char)(i * 3 + 1);
	int lrc = mlx5dv_crypto_login(ctx, &la);
	if (lrc) { fprintf(stderr, "crypto_login: %s\n", strerror(lrc)); return 1; }

	shim_devx_label("ibv_alloc_pd");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, data, BUFF_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) : NULL;
	if (!pd || !mr) { perror("pd/mr"); return 1; }

	for (int k = 0; k < NUM_DEKS; k++) {
		char lb[64]; snprintf(lb, sizeof lb, "mlx5dv_dek_create[%d]", k); shim_devx_label(lb);
		struct mlx5dv_dek_init_attr da; memset(&da, 0, sizeof da);
		da.key_size = MLX5DV_CRYPTO_KEY_SIZE_128; da.has_keytag = 0; da.key_purpose = MLX5DV_CRYPTO_KEY_PURPOSE_AES_XTS;
		da.pd = pd; da.opaque[0] = 0x11;
		for (int i = 0; i < 40; i++) da.key[i] = (char)((k == 0 ? 0xa0 : 0xc0) + i);
		dek[k] = mlx5dv_dek_create(ctx, &da);
		if (!dek[k]) { perror("dek_create"); return 1; }
		dek_id[k] = 0xd0e1 + k; /* what devx.c hands out, in order (checked against the DEVX log by check.py) */
	}
	shim_devx_label("mlx5dv_create_mkey(INDIRECT|CRYPTO,1)");
	struct mlx5dv_mkey_init_attr ma; memset(&ma, 0, sizeof ma);
	ma.pd = pd; ma.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT | MLX5DV_MKEY_INIT_ATTR_FLAGS_CRYPTO; ma.max_entries = 1;
	mkey = mlx5dv_create_mkey(&ma);
	if (!mkey) { perror("create_mkey"); return 1; }

	shim_devx_label("qp_setup");
	cq = ibv_create_cq(ctx, TX_DEPTH * 2, NULL, NULL, 0);
	if (!cq) { perror("cq"); return 1; }
	C = &S->cq[S->ncq - 1];
	struct ibv_qp_init_attr_ex ia; memset(&ia, 0, sizeof ia);
	ia.qp_type = IBV_QPT_RC; ia.send_cq = cq; ia.recv_cq = cq; ia.pd = pd;
	ia.cap.max_send_wr = TX_DEPTH * 2; ia.cap.max_recv_wr = 16; ia.cap.max_send_sge = 1; ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = AES_XTS_INLINE;
	ia.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_PD;
	ia.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ;
	struct mlx5dv_qp_init_attr dva; memset(&dva, 0, sizeof dva);
	dva.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS;
	dva.send_ops_flags = MLX5DV_QP_EX_WITH_MKEY_CONFIGURE;
	dva.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE; /* as perftest: not in comp_mask, so ignored */
	qp = mlx5dv_create_qp(ctx, &ia, &dva);
	if (!qp) { perror("mlx5dv_create_qp"); return 1; }
	Q = &S->qp[S->nqp - 1];
	qpx = ibv_qp_to_qp_ex(qp); dvqp = mlx5dv_qp_ex_from_ibv_qp_ex(qpx);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	int r1 = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR; a.path_mtu = IBV_MTU_4096; a.dest_qp_num = 0x000b2d; a.rq_psn = 0x000111; a.max_dest_rd_atomic = 16; a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1; a.ah_attr.port_num = 1; a.ah_attr.grh.sgid_index = 3; a.ah_attr.grh.hop_limit = 64;
	uint8_t dgid[16] = {0,0,0,0,0,0,0,0,0,0,0xff,0xff,192,168,1,2}; memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	int r2 = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS; a.sq_psn = 0x000222; a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7; a.max_rd_atomic = 16;
	int r3 = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);

	fprintf(fx, "{\"variant\":\"%s\",\"shim_crypto_engines\":\"%s\",\"query_device_rc\":%d,\"dv_comp_mask_out\":\"0x%llx\",\"crypto_caps\":{\"failed_selftests\":%u,\"crypto_engines\":%u,\"wrapped_import_method\":%u,\"log_max_num_deks\":%u,\"flags\":%u},"
		"\"modify_rc\":[%d,%d,%d],\"qpn\":\"0x%x\",\"uidx\":\"0x%x\",\"qp_create_flags_drv\":\"0x%x\",\"sq_wqe_count\":%u,\"rq_wqe_count\":%u,\"rq_wqe_shift\":%u,"
		"\"qp_cap_after_create\":{\"max_send_wr\":%u,\"max_recv_wr\":%u,\"max_send_sge\":%u,\"max_recv_sge\":%u,\"max_inline_data\":%u},"
		"\"bfreg_index\":%u,\"cqn\":\"0x%x\",\"ncqe\":%u,\"mr_lkey\":\"0x%x\",\"mkey_lkey\":\"0x%x\",\"mkey_rkey\":\"0x%x\",\"mkey_max_entries_after_create\":%u,"
		"\"dek_obj_ids\":[\"0x%x\",\"0x%x\"],\"pdn\":\"0x19\",\"data_va\":\"0x%llx\",\"buff_size\":%u,\"msg_size\":%u,"
		"\"mlx5_shut_up_bf\":%d,\"num_uar_pages_mapped\":%d,\"uar_mmap_offsets\":[",
		variant, getenv("SHIM_CRYPTO_ENGINES") ? getenv("SHIM_CRYPTO_ENGINES") : "multi", qrc, (unsigned long long)dvc.comp_mask,
		dvc.crypto_caps.failed_selftests, dvc.crypto_caps.crypto_engines, dvc.crypto_caps.wrapped_import_method, dvc.crypto_caps.log_max_num_deks, dvc.crypto_caps.flags,
		r1, r2, r3, Q->qpn, Q->uidx, Q->flags, Q->sq_wqe_count, Q->rq_wqe_count, Q->rq_wqe_shift,
		ia.cap.max_send_wr, ia.cap.max_recv_wr, ia.cap.max_send_sge, ia.cap.max_recv_sge, ia.cap.max_inline_data,
		Q->resp_bfreg_index, C->cqn, C->ncqe, mr->lkey, mkey->lkey, mkey->rkey, ma.max_entries, dek_id[0], dek_id[1], DATA_VA, BUFF_SIZE, MSG_SIZE,
		getenv("MLX5_SHUT_UP_BF") && atoi(getenv("MLX5_SHUT_UP_BF")), S->nuar);
	for (int i = 0; i < S->nuar; i++) fprintf(fx, "%s%lu", i ? "," : "", (unsigned long)S->uar[i].offset);
	fprintf(fx, "]}\n");
	fclose(fx);

	shim_devx_label("posts");
	shim_trap_enable(1);
	int single = !strcmp(variant, "single_block");
	if (!single) {
		static const struct enc_case cases[] = {
			{ "write_dus512_sig_after_decrypt_tx", 0, 0, MLX5DV_BLOCK_SIZE_512, D_WRITE, 0 },   /* perftest defaults */
			{ "write_dus512_sig_after_decrypt_tx_again", 0, 0, MLX5DV_BLOCK_SIZE_512, D_WRITE, 0 }, /* 2nd DEK */
			{ "write_dus512_sig_after_encrypt_tx", 1, 0, MLX5DV_BLOCK_SIZE_512, D_WRITE, 0 },
			{ "write_dus512_sig_before_decrypt_tx", 0, 1, MLX5DV_BLOCK_SIZE_512, D_WRITE, 0 },
			{ "write_dus512_sig_before_encrypt_tx", 1, 1, MLX5DV_BLOCK_SIZE_512, D_WRITE, 0 },
			{ "write_dus520", 0, 0, MLX5DV_BLOCK_SIZE_520, D_WRITE, 0 },
			{ "write_dus4048", 0, 0, MLX5DV_BLOCK_SIZE_4048, D_WRITE, 0 },
			{ "write_dus4096", 0, 0, MLX5DV_BLOCK_SIZE_4096, D_WRITE, 0 },
			{ "write_dus4160", 0, 0, MLX5DV_BLOCK_SIZE_4160, D_WRITE, 0 },
			{ "send_dus512", 0, 0, MLX5DV_BLOCK_SIZE_512, D_SEND, 0 },
			{ "read_dus512", 0, 0, MLX5DV_BLOCK_SIZE_512, D_READ, 0 },
		};
		for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) post_enc(&cases[i], 1);
		/* wrap: the UMR WQE starts 1..4 WQEBBs before the SQ end, so each of its segments in turn
		 * is the first one to continue at slot 0 */
		for (uint32_t back = 1; back <= 4; back++) {
			move_head_to(Q->sq_wqe_count - back);
			char nm[64]; snprintf(nm, sizeof nm, "wrap_umr_starts_%u_before_end", back);
			struct enc_case k = { nm, 0, 0, MLX5DV_BLOCK_SIZE_512, D_WRITE, 0 };
			post_enc(&k, 1);
		}
	} else {
		/* single-block engine only: libmlx5 keeps the tweak little-endian and insists that the
		 * mkey length fits one data unit */
		static const struct enc_case cases[] = {
			{ "single_write_dus512_len8192_rejected", 0, 0, MLX5DV_BLOCK_SIZE_512, D_WRITE, 0 },
			{ "single_write_dus512_len512", 0, 0, MLX5DV_BLOCK_SIZE_512, D_WRITE, 512 },
			{ "single_write_dus4096_len4096_encrypt_tx", 1, 0, MLX5DV_BLOCK_SIZE_4096, D_WRITE, 4096 },
		};
		for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) post_enc(&cases[i], 1);
	}
	shim_trap_enable(0);

	/* teardown in perftest 6.06's destroy_ctx order: QP, CQ, MR, DEKs, mkeys, PD, device */
	shim_devx_label("ibv_destroy_qp/cq, ibv_dereg_mr"); ibv_destroy_qp(qp); ibv_destroy_cq(cq); ibv_dereg_mr(mr);
	for (int k = 0; k < NUM_DEKS; k++) { char lb[64]; snprintf(lb, sizeof lb, "mlx5dv_dek_destroy[%d]", k); shim_devx_label(lb);
		int r = mlx5dv_dek_destroy(dek[k]); if (r) fprintf(stderr, "dek_destroy %d\n", r); }
	shim_devx_label("mlx5dv_destroy_mkey"); { int r = mlx5dv_destroy_mkey(mkey); if (r) fprintf(stderr, "destroy_mkey %d\n", r); }
	shim_devx_label("ibv_dealloc_pd"); ibv_dealloc_pd(pd);
	/* extra, not in perftest 6.06 (it never logs out; closing the context frees the login object in
	 * the kernel): records the login object's destroy */
	shim_devx_label("mlx5dv_crypto_logout(extra)"); { int r = mlx5dv_crypto_logout(ctx); if (r) fprintf(stderr, "crypto_logout %d\n", r); }
	shim_devx_label("ibv_close_device"); ibv_close_device(ctx);
	ibv_free_device_list(l);
	fclose(fu);
	fprintf(stderr, "done (%s); ci=%u dek_number=%u\n", variant, ci, dek_number);
	return 0;
}
