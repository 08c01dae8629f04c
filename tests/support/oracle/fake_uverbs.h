/* The part of a fake uverbs kernel that both oracle shims share (tests/mlx5-oracle/crypto/src/shim.c,
 * tests/rxe-oracle/hotpath/src/shim.c): the log, the open / stat / close interposers that turn
 * /dev/infiniband/uverbs* into a "fake fd" on /dev/null, the decoding of a write() command and
 * the commands both answer alike. Included once by each shim, after:
 *   S                  its struct shim_state, with an int fake_fd (-1: none open);
 *   SHIM_LOG_DEFAULT   the log file used when SHIM_LOG is unset;
 *   SHIM_FAKE_NAME     how the log names the opened node.
 * Own code, written from the libc and uAPI interfaces. */
#ifndef ORACLE_FAKE_UVERBS_H
#define ORACLE_FAKE_UVERBS_H

static FILE *logf_;

void shim_log(const char *fmt, ...)
{
	if (!logf_) {
		const char *p = getenv("SHIM_LOG");
		logf_ = fopen(p ? p : SHIM_LOG_DEFAULT, "w");
		if (!logf_) return;
		setvbuf(logf_, NULL, _IOLBF, 0);
	}
	va_list ap; va_start(ap, fmt); vfprintf(logf_, fmt, ap); va_end(ap);
}

static int is_fake_path(const char *p) { return p && strncmp(p, "/dev/infiniband/uverbs", 22) == 0; }

/* ---------- open / stat redirection ---------- */
static int do_open_fake(int flags)
{
	int fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", (flags & ~(O_CREAT | O_TRUNC)) | O_CLOEXEC, 0);
	if (fd >= 0) { S.fake_fd = fd; shim_log("open(%s) -> fake fd %d\n", SHIM_FAKE_NAME, fd); }
	return fd;
}
int open(const char *path, int flags, ...)
{
	mode_t mode = 0; if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, int); va_end(ap); }
	if (is_fake_path(path)) return do_open_fake(flags);
	return syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
int __open_2(const char *path, int flags) { return open(path, flags); }
int __open64_2(const char *path, int flags) { return open(path, flags); }
int openat(int dfd, const char *path, int flags, ...)
{
	mode_t mode = 0; if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, int); va_end(ap); }
	if (is_fake_path(path)) return do_open_fake(flags);
	return syscall(SYS_openat, dfd, path, flags, mode);
}
int openat64(int dfd, const char *path, int flags, ...) __attribute__((alias("openat")));
int __openat_2(int dfd, const char *path, int flags) { return openat(dfd, path, flags); }
int __openat64_2(int dfd, const char *path, int flags) { return openat(dfd, path, flags); }

int stat(const char *path, struct stat *st)
{
	static int (*real)(const char *, struct stat *);
	if (!real) real = dlsym(RTLD_NEXT, "stat");
	return real(is_fake_path(path) ? "/dev/null" : path, st);
}
int stat64(const char *path, struct stat64 *st)
{
	static int (*real)(const char *, struct stat64 *);
	if (!real) real = dlsym(RTLD_NEXT, "stat64");
	return real(is_fake_path(path) ? "/dev/null" : path, st);
}

int close(int fd)
{
	if (fd >= 0 && fd == S.fake_fd) { shim_log("close(fake fd %d)\n", fd); S.fake_fd = -1; }
	return syscall(SYS_close, fd);
}

/* ---------- write() commands ---------- */
/* One write() command as the uverbs ABI lays it out: legacy (the 8-byte header, the response
 * address in the first core word, sizes in 4-byte words) or extended (the ex header after it,
 * sizes in 8-byte words, the driver's parts after the core ones). A legacy command's driver parts
 * are left NULL / 0: only the command's own struct sizes split them. */
struct shim_cmd {
	int ex; uint32_t num;
	const uint8_t *core; size_t core_len;
	const uint8_t *drv_in; size_t drv_in_len;
	uint8_t *out; size_t core_out_len;
	uint8_t *drv_out; size_t drv_out_len;
};

/* decode the command in buf and log its "write cmd" line */
static struct shim_cmd shim_cmd_decode(const void *buf, size_t len)
{
	const struct ib_uverbs_cmd_hdr *h = buf;
	struct shim_cmd c;
	uint32_t cmd = h->command; c.ex = !!(cmd & IB_USER_VERBS_CMD_FLAG_EXTENDED);
	c.num = cmd & IB_USER_VERBS_CMD_COMMAND_MASK;
	if (!c.ex) {
		c.core = (const uint8_t *)buf + 8; c.core_len = h->in_words * 4 - 8;
		c.core_out_len = h->out_words * 4; c.out = c.core_out_len ? (uint8_t *)(uintptr_t)*(const uint64_t *)c.core : NULL;
		c.drv_in = NULL; c.drv_in_len = 0; c.drv_out = NULL; c.drv_out_len = 0;
	} else {
		const struct ib_uverbs_ex_cmd_hdr *eh = (const void *)((const uint8_t *)buf + 8);
		c.core = (const uint8_t *)buf + 24; c.core_len = h->in_words * 8;
		c.drv_in = c.core + c.core_len; c.drv_in_len = eh->provider_in_words * 8;
		c.out = (uint8_t *)(uintptr_t)eh->response; c.core_out_len = h->out_words * 8;
		c.drv_out = c.out ? c.out + c.core_out_len : NULL; c.drv_out_len = eh->provider_out_words * 8;
	}
	shim_log("write cmd %s%u in_words %u out_words %u len %zu\n", c.ex ? "EX " : "", c.num, h->in_words, h->out_words, len);
	return c;
}

/* the response starts zeroed: the core part, and for an extended command the driver's too */
static void shim_cmd_zero_out(const struct shim_cmd *c)
{
	if (c->out && !c->ex) memset(c->out, 0, c->core_out_len);
	if (c->out && c->ex) memset(c->out, 0, c->core_out_len + c->drv_out_len);
}

/* QUERY_DEVICE, legacy or extended: where its (base) attributes go. The extended answer says its
 * length and comes back in *ex for the caller's extended fields (NULL for the legacy command). */
static struct ib_uverbs_query_device_resp *shim_query_device(const struct shim_cmd *c,
							     struct ib_uverbs_ex_query_device_resp **ex)
{
	if (!c->ex) { *ex = NULL; return (void *)c->out; }
	struct ib_uverbs_ex_query_device_resp *r = (void *)c->out;
	r->response_length = c->core_out_len < sizeof(*r) ? c->core_out_len : sizeof(*r);
	*ex = r;
	return &r->base;
}

/* The commands both fake kernels answer alike, by their switch key (num, | 0x100 if extended):
 * MODIFY_QP (on_modify, if any, sees it first; logged; an extended response gets its length),
 * the deallocs and destroys (nothing to undo). Anything else is unsupported: EOPNOTSUPP.
 * Returns 0 when answered, -1 (errno set) when not. */
static int shim_common_cmd(uint32_t key, const struct shim_cmd *cmd,
			   void (*on_modify)(const struct ib_uverbs_modify_qp *))
{
	switch (key) {
	case IB_USER_VERBS_CMD_MODIFY_QP:
	case 0x100 | IB_USER_VERBS_EX_CMD_MODIFY_QP: {
		const struct ib_uverbs_modify_qp *c = (const void *)cmd->core;
		if (on_modify) on_modify(c);
		shim_log("  MODIFY_QP mask 0x%x state %u\n", c->attr_mask, c->qp_state);
		if (cmd->ex && cmd->out) ((struct ib_uverbs_ex_modify_qp_resp *)cmd->out)->response_length = sizeof(struct ib_uverbs_ex_modify_qp_resp);
		return 0; }
	case IB_USER_VERBS_CMD_DEALLOC_PD: case IB_USER_VERBS_CMD_DEREG_MR:
	case IB_USER_VERBS_CMD_DESTROY_CQ: case IB_USER_VERBS_CMD_DESTROY_QP:
		return 0;
	default:
		shim_log("  unsupported -> EOPNOTSUPP\n"); errno = EOPNOTSUPP; return -1;
	}
}

#endif
