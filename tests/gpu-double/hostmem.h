/* The "device memory" of the GPU test doubles (libcuda.c, libhsa.c): host memory, NOT A GPU.
 * Each allocation is a sealed memfd mapped shared, so that /dev/udmabuf (where the kernel has
 * it) can export it as a real dma-buf of host pages; with GPU_DOUBLE_DMABUF=memfd and no udmabuf
 * a dup of the memfd stands in (NOT a dma-buf: it lets a test see how a kernel refuses it).
 * Included by one double each; own code, from <linux/udmabuf.h> and the memfd/mmap man pages. */
#ifndef GPU_DOUBLE_HOSTMEM_H
#define GPU_DOUBLE_HOSTMEM_H

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/* <linux/udmabuf.h> */
struct double_udmabuf_create { uint32_t memfd, flags; uint64_t offset, size; };
#define DOUBLE_UDMABUF_FLAGS_CLOEXEC 0x01
#define DOUBLE_UDMABUF_CREATE _IOW('u', 0x42, struct double_udmabuf_create)

#define DOUBLE_MAX_ALLOCS 64
static struct double_alloc { uintptr_t base; size_t len; int memfd; } double_allocs[DOUBLE_MAX_ALLOCS];

/* GPU_DOUBLE_DEVICES: how many devices (default 1, at most 16). */
static inline int double_ndev(void)
{
	const char *e = getenv("GPU_DOUBLE_DEVICES");
	int n = e ? atoi(e) : 1;
	return n < 0 ? 0 : n > 16 ? 16 : n;
}
static inline int double_udmabuf_ok(void)
{
	int fd = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (fd < 0) return 0;
	close(fd);
	return 1;
}
static inline int double_memfd_mode(void)
{
	const char *e = getenv("GPU_DOUBLE_DMABUF");
	return e && strcmp(e, "memfd") == 0;
}
/* A page-rounded shared memfd mapping; 0 when out of slots or memory. */
static uintptr_t double_alloc(size_t len)
{
	int slot = -1;
	for (int i = 0; i < DOUBLE_MAX_ALLOCS; i++) if (!double_allocs[i].base) { slot = i; break; }
	if (slot < 0 || len == 0) return 0;
	long page = sysconf(_SC_PAGESIZE);
	size_t n = (len + page - 1) & ~(size_t)(page - 1);
	int fd = memfd_create("rperftest-gpu-double", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) return 0;
	/* udmabuf wants a memfd that cannot shrink */
	if (ftruncate(fd, n) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK)) { close(fd); return 0; }
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) { close(fd); return 0; }
	double_allocs[slot] = (struct double_alloc){ (uintptr_t)m, n, fd };
	return (uintptr_t)m;
}
/* The allocation holding [p, p+len), or NULL. */
static const struct double_alloc *double_find(uintptr_t p, size_t len)
{
	for (int i = 0; i < DOUBLE_MAX_ALLOCS; i++)
		if (double_allocs[i].base && p >= double_allocs[i].base && p + len <= double_allocs[i].base + double_allocs[i].len)
			return &double_allocs[i];
	return NULL;
}
/* Free the allocation starting at p; 0 when there is none. */
static int double_free(uintptr_t p)
{
	for (int i = 0; i < DOUBLE_MAX_ALLOCS; i++)
		if (p && double_allocs[i].base == p) {
			munmap((void *)double_allocs[i].base, double_allocs[i].len);
			close(double_allocs[i].memfd);
			double_allocs[i] = (struct double_alloc){ 0, 0, -1 };
			return 1;
		}
	return 0;
}
/* A dma-buf of [off, off+len) of the allocation through udmabuf, or the memfd stand-in; -1. */
static int double_export(const struct double_alloc *a, uint64_t off, uint64_t len)
{
	int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev >= 0) {
		struct double_udmabuf_create c = { (uint32_t)a->memfd, DOUBLE_UDMABUF_FLAGS_CLOEXEC, off, len };
		int fd = ioctl(dev, DOUBLE_UDMABUF_CREATE, &c);
		close(dev);
		return fd;
	}
	if (double_memfd_mode()) return fcntl(a->memfd, F_DUPFD_CLOEXEC, 0); /* NOT a dma-buf */
	return -1;
}

#endif
