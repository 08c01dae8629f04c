/* mlx5 crypto oracle: the DEVX part of the fake kernel. Own code.
 *
 * Answers the three mlx5 driver-namespace methods libmlx5's crypto path uses:
 *   MLX5_IB_OBJECT_DEVX     / MLX5_IB_METHOD_DEVX_OTHER      (general command: QUERY_HCA_CAP, ...)
 *   MLX5_IB_OBJECT_DEVX_OBJ / MLX5_IB_METHOD_DEVX_OBJ_CREATE (CREATE_GENERAL_OBJECT, CREATE_MKEY)
 *   MLX5_IB_OBJECT_DEVX_OBJ / MLX5_IB_METHOD_DEVX_OBJ_DESTROY
 * Every other ioctl returns -ENOTTY so the caller keeps the old "no ioctl framework" answer.
 * Each answered ioctl is appended as one JSON line to $SHIM_DEVX_LOG: the cmd_in bytes verbatim
 * (hex) and the cmd_out bytes we answered.
 *
 * PRM field positions (bit offset from the start of the mailbox, big-endian dwords, bit 0 = MSB
 * of dword 0) were computed from rdma-core v44.0 providers/mlx5/mlx5_ifc.h with prm_offsets.py
 * (see run.sh / README); the numbers are facts of the device interface, not copied code. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <endian.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include "shim.h"

/* opcodes / object types / op_mod values (PRM) */
#define OP_QUERY_HCA_CAP            0x100
#define OP_CREATE_MKEY              0x200
#define OP_CREATE_GENERAL_OBJECT    0xa00
#define OBJ_TYPE_DEK                0x000c
#define OBJ_TYPE_CRYPTO_LOGIN       0x001f
#define CAP_GENERAL                 0x00   /* op_mod >> 1 */
#define CAP_CRYPTO                  0x1a

/* bit offsets inside query_hca_cap_out (capability starts at bit 0x80) */
#define B_CAP_AES_XTS_SINGLE_LE     0x471  /* cmd_hca_cap.aes_xts_single_block_le_tweak, 1 bit */
#define B_CAP_AES_XTS_MULTI_BE      0x472  /* cmd_hca_cap.aes_xts_multi_block_be_tweak, 1 bit */
#define B_CAP_GENERAL_OBJ_TYPES     0x480  /* cmd_hca_cap.general_obj_types, 64 bits */
#define B_CAP_CRYPTO                0x4e9  /* cmd_hca_cap.crypto, 1 bit */
#define B_CAP_LOG_MAX_KLM_LIST      0x19a  /* cmd_hca_cap.log_max_klm_list_size, 6 bits */
#define B_CRY_WRAPPED_OPERATIONAL   0x080  /* crypto_caps.wrapped_crypto_operational, 1 bit */
#define B_CRY_WRAPPED_IMPORT_METHOD 0x098  /* crypto_caps.wrapped_import_method, 8 bits */
#define B_CRY_LOG_MAX_NUM_DEKS      0x0ab  /* crypto_caps.log_max_num_deks, 5 bits */
#define B_CRY_FAILED_SELFTESTS      0x0c0  /* crypto_caps.failed_selftests, 16 bits */
#define WRAPPED_IMPORT_METHOD_AES   0x4
/* inputs */
#define B_IN_OPCODE                 0x000  /* 16 bits, every command */
#define B_IN_OP_MOD                 0x030  /* query_hca_cap_in.op_mod, 16 bits */
#define B_IN_OBJ_TYPE               0x030  /* general_obj_in_cmd_hdr.obj_type, 16 bits */
/* outputs */
#define B_OUT_OBJ_ID                0x040  /* general_obj_out_cmd_hdr.obj_id, 32 bits */
#define B_OUT_MKEY_INDEX            0x048  /* create_mkey_out.mkey_index, 24 bits */

/* the ids this fake kernel hands out (chosen; a real device picks its own) */
#define CRYPTO_LOGIN_OBJ_ID         0x00000c10u
#define DEK_OBJ_ID_BASE             0x0000d0e1u  /* DEK n gets BASE + n */
#define MKEY_INDEX_BASE             0x00abc1u    /* mkey n gets index BASE + n, lkey = index << 8 */

static void prm_set(uint8_t *mb, unsigned bit, unsigned width, uint64_t v)
{
	for (unsigned i = 0; i < width; i++) {
		unsigned b = bit + width - 1 - i; /* LSB of v goes to the last bit of the field */
		uint8_t m = 0x80 >> (b % 8);
		if ((v >> i) & 1) mb[b / 8] |= m; else mb[b / 8] &= ~m;
	}
}
static uint64_t prm_get(const uint8_t *mb, size_t len, unsigned bit, unsigned width)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < width; i++) {
		unsigned b = bit + i;
		if (b / 8 >= len) return v;
		v = (v << 1) | ((mb[b / 8] >> (7 - b % 8)) & 1);
	}
	return v;
}

static FILE *dlog;
static int seq;
static char label[128] = "unlabelled";
static uint32_t next_handle = 0x100, next_dek, next_mkey;
struct obj { uint32_t handle, opcode, obj_type, id; int live; };
static struct obj objs[64]; static int nobj;

void shim_devx_label(const char *l) { snprintf(label, sizeof label, "%s", l); }

static void jhex(FILE *f, const void *p, size_t n)
{ const uint8_t *b = p; fputc('"', f); for (size_t i = 0; i < n; i++) fprintf(f, "%02x", b[i]); fputc('"', f); }

static FILE *logf_devx(void)
{
	if (!dlog) {
		const char *p = getenv("SHIM_DEVX_LOG");
		dlog = fopen(p ? p : "/tmp/mlx5-crypto-oracle-devx.jsonl", "w");
		if (dlog) setvbuf(dlog, NULL, _IOLBF, 0);
	}
	return dlog;
}

static struct ib_uverbs_attr *find_attr(struct ib_uverbs_ioctl_hdr *h, uint16_t id)
{
	for (unsigned i = 0; i < h->num_attrs; i++) if (h->attrs[i].attr_id == id) return &h->attrs[i];
	return NULL;
}
/* PTR_IN data of 8 bytes or less travels inline in .data */
static const uint8_t *in_ptr(struct ib_uverbs_attr *a)
{ return a->len <= sizeof(a->data) ? (const uint8_t *)&a->data : (const uint8_t *)(uintptr_t)a->data; }

static const char *env_or(const char *n, const char *d) { const char *v = getenv(n); return v && *v ? v : d; }

static void answer_query_hca_cap(unsigned op_mod, uint8_t *out, size_t outlen)
{
	unsigned cap = op_mod >> 1;
	const char *eng = env_or("SHIM_CRYPTO_ENGINES", "multi"); /* multi | single | both | none */
	if (cap == CAP_GENERAL) {
		if (strcmp(eng, "none") != 0) prm_set(out, B_CAP_CRYPTO, 1, 1);
		if (!strcmp(eng, "single") || !strcmp(eng, "both")) prm_set(out, B_CAP_AES_XTS_SINGLE_LE, 1, 1);
		if (!strcmp(eng, "multi") || !strcmp(eng, "both")) prm_set(out, B_CAP_AES_XTS_MULTI_BE, 1, 1);
		prm_set(out, B_CAP_GENERAL_OBJ_TYPES, 64, (1ull << OBJ_TYPE_DEK) | (1ull << OBJ_TYPE_CRYPTO_LOGIN));
		prm_set(out, B_CAP_LOG_MAX_KLM_LIST, 6, 16);
	} else if (cap == CAP_CRYPTO) {
		prm_set(out, B_CRY_WRAPPED_OPERATIONAL, 1, 1);
		prm_set(out, B_CRY_WRAPPED_IMPORT_METHOD, 8, WRAPPED_IMPORT_METHOD_AES);
		prm_set(out, B_CRY_LOG_MAX_NUM_DEKS, 5, 16);
		prm_set(out, B_CRY_FAILED_SELFTESTS, 16, 0);
	}
	(void)outlen; /* every other capability page: all zero (status 0) */
}

/* the ioctl framing as libmlx5 sent it: header and every attribute (ids, lengths, flags; .data
 * only where it is a value, i.e. an object handle slot or inline data of 8 bytes or less) */
static char framing[2048];
static void record_framing(struct ib_uverbs_ioctl_hdr *h)
{
	int n = snprintf(framing, sizeof framing, "{\"length\":%u,\"object_id\":\"0x%x\",\"method_id\":\"0x%x\",\"num_attrs\":%u,\"driver_id\":%u,\"attrs\":[",
			 h->length, h->object_id, h->method_id, h->num_attrs, h->driver_id);
	for (unsigned i = 0; i < h->num_attrs && n < (int)sizeof framing - 200; i++) {
		struct ib_uverbs_attr *a = &h->attrs[i];
		int ptr = a->len > sizeof(a->data);
		n += snprintf(framing + n, sizeof framing - n, "%s{\"attr_id\":\"0x%x\",\"len\":%u,\"flags\":%u,\"attr_data\":%u,\"data\":",
			      i ? "," : "", a->attr_id, a->len, a->flags, a->attr_data.reserved);
		if (ptr) n += snprintf(framing + n, sizeof framing - n, "\"pointer\"}");
		else n += snprintf(framing + n, sizeof framing - n, "\"0x%llx\"}", (unsigned long long)a->data);
	}
	snprintf(framing + n, sizeof framing - n, "]}");
}

int shim_devx_ioctl(unsigned long req, void *arg)
{
	struct ib_uverbs_ioctl_hdr *h = arg;
	if (req != RDMA_VERBS_IOCTL || !h) return -ENOTTY;
	int general = h->object_id == MLX5_IB_OBJECT_DEVX && h->method_id == MLX5_IB_METHOD_DEVX_OTHER;
	int create = h->object_id == MLX5_IB_OBJECT_DEVX_OBJ && h->method_id == MLX5_IB_METHOD_DEVX_OBJ_CREATE;
	int destroy = h->object_id == MLX5_IB_OBJECT_DEVX_OBJ && h->method_id == MLX5_IB_METHOD_DEVX_OBJ_DESTROY;
	if (!general && !create && !destroy) return -ENOTTY;
	if (!shim_state()->devx) { shim_log("ioctl DEVX obj 0x%x method 0x%x without a DEVX context -> EPERM\n", h->object_id, h->method_id); return -EPERM; }
	FILE *f = logf_devx();
	int n = seq++;
	record_framing(h);

	if (destroy) {
		struct ib_uverbs_attr *ha = find_attr(h, MLX5_IB_ATTR_DEVX_OBJ_DESTROY_HANDLE);
		uint32_t hd = ha ? (uint32_t)ha->data : 0;
		struct obj *o = NULL;
		for (int i = 0; i < nobj; i++) if (objs[i].handle == hd && objs[i].live) o = &objs[i];
		shim_log("ioctl DEVX_OBJ_DESTROY handle 0x%x -> %s\n", hd, o ? "ok" : "ENOENT");
		if (f) fprintf(f, "{\"seq\":%d,\"label\":\"%s\",\"method\":\"DEVX_OBJ_DESTROY\",\"num_attrs\":%u,\"handle\":\"0x%x\",\"destroys\":{\"opcode\":\"0x%x\",\"obj_type\":\"0x%x\",\"id\":\"0x%x\"},\"rc\":%d,\"ioctl\":%s}\n",
			       n, label, h->num_attrs, hd, o ? o->opcode : 0, o ? o->obj_type : 0, o ? o->id : 0, o ? 0 : -ENOENT, framing);
		if (!o) return -ENOENT;
		o->live = 0;
		return 0;
	}

	uint16_t in_id = general ? MLX5_IB_ATTR_DEVX_OTHER_CMD_IN : MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_IN;
	uint16_t out_id = general ? MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT : MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_OUT;
	struct ib_uverbs_attr *ai = find_attr(h, in_id), *ao = find_attr(h, out_id);
	struct ib_uverbs_attr *ah = create ? find_attr(h, MLX5_IB_ATTR_DEVX_OBJ_CREATE_HANDLE) : NULL;
	if (!ai || !ao || (create && !ah)) { shim_log("ioctl DEVX: missing attribute -> EINVAL\n"); return -EINVAL; }
	const uint8_t *in = in_ptr(ai); size_t inlen = ai->len;
	uint8_t *out = (uint8_t *)(uintptr_t)ao->data; size_t outlen = ao->len;
	memset(out, 0, outlen);
	unsigned opcode = prm_get(in, inlen, B_IN_OPCODE, 16);
	unsigned op_mod = prm_get(in, inlen, B_IN_OP_MOD, 16);
	unsigned obj_type = 0; uint32_t id = 0; const char *what = "other";

	if (general) {
		if (opcode == OP_QUERY_HCA_CAP) { what = "QUERY_HCA_CAP"; answer_query_hca_cap(op_mod, out, outlen); }
	} else if (opcode == OP_CREATE_GENERAL_OBJECT) {
		obj_type = prm_get(in, inlen, B_IN_OBJ_TYPE, 16);
		if (obj_type == OBJ_TYPE_CRYPTO_LOGIN) { what = "CREATE_GENERAL_OBJECT(CRYPTO_LOGIN)"; id = CRYPTO_LOGIN_OBJ_ID; }
		else if (obj_type == OBJ_TYPE_DEK) { what = "CREATE_GENERAL_OBJECT(DEK)"; id = DEK_OBJ_ID_BASE + next_dek++; }
		else { what = "CREATE_GENERAL_OBJECT(?)"; id = 0x777; }
		prm_set(out, B_OUT_OBJ_ID, 32, id);
	} else if (opcode == OP_CREATE_MKEY) {
		what = "CREATE_MKEY"; id = MKEY_INDEX_BASE + next_mkey++;
		prm_set(out, B_OUT_MKEY_INDEX, 24, id);
	}
	/* status 0, syndrome 0: already zero */
	if (create) {
		ah->data = next_handle++;
		if (nobj < 64) objs[nobj++] = (struct obj){ (uint32_t)ah->data, opcode, obj_type, id, 1 };
	}
	ao->flags |= UVERBS_ATTR_F_VALID_OUTPUT;
	shim_log("ioctl DEVX %s opcode 0x%x op_mod 0x%x inlen %zu outlen %zu -> id 0x%x%s\n", general ? "OTHER" : "OBJ_CREATE",
		 opcode, op_mod, inlen, outlen, id, create ? "" : "");
	if (f) {
		fprintf(f, "{\"seq\":%d,\"label\":\"%s\",\"method\":\"%s\",\"num_attrs\":%u,\"what\":\"%s\",\"opcode\":\"0x%x\",\"op_mod\":\"0x%x\"",
			n, label, general ? "DEVX_OTHER" : "DEVX_OBJ_CREATE", h->num_attrs, what, opcode, op_mod);
		if (obj_type) fprintf(f, ",\"obj_type\":\"0x%x\"", obj_type);
		if (create) fprintf(f, ",\"handle\":\"0x%x\",\"id\":\"0x%x\"", (uint32_t)ah->data, id);
		fprintf(f, ",\"cmd_in_len\":%zu,\"cmd_in\":", inlen); jhex(f, in, inlen);
		fprintf(f, ",\"cmd_out_len\":%zu,\"cmd_out\":", outlen); jhex(f, out, outlen);
		fprintf(f, ",\"ioctl\":%s}\n", framing);
	}
	return 0;
}
