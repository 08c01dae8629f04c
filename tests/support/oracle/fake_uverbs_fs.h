/* The part of a fake uverbs kernel that both oracle shims share (tests/mlx5-oracle/crypto/src/shim.c,
 * tests/rxe-oracle/hotpath/src/shim.c): the log, and the open / stat / close interposers that turn
 * /dev/infiniband/uverbs* into a "fake fd" on /dev/null. Included once by each shim, after:
 *   S                  its struct shim_state, with an int fake_fd (-1: none open);
 *   SHIM_LOG_DEFAULT   the log file used when SHIM_LOG is unset;
 *   SHIM_FAKE_NAME     how the log names the opened node.
 * Own code, written from the libc and uAPI interfaces. */
#ifndef ORACLE_FAKE_UVERBS_FS_H
#define ORACLE_FAKE_UVERBS_FS_H

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

#endif
