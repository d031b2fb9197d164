/*
 * device_cpu.c - the host CPU as a vs_device: malloc'd buffers, monotonic clock, LLC flush. Sparse
 * buffers are a PROT_NONE reservation of the whole range (address space only: no memory, no swap)
 * whose first page and stored range are made readable and writable.
 */
#include "device.h"
#include "vs_error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* One sparse buffer: its reservation, what munmap needs. */
struct cpu_sparse {
	void *base;
	size_t bytes;
	struct cpu_sparse *next;
};

struct cpu_priv {
	unsigned char *flush;
	size_t flush_bytes;
	struct timespec t0;
	struct cpu_sparse *sparse; /* live sparse buffers */
};

static int cpu_alloc(struct vs_device *d, void **ptr, size_t bytes)
{
	void *p = NULL;

	(void)d;
	if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
		return vs_error(VS_ENOMEM, "cannot allocate %zu bytes of host memory", bytes);
	*ptr = p;
	return 0;
}

static void cpu_free(struct vs_device *d, void *ptr)
{
	(void)d;
	free(ptr);
}

static int cpu_alloc_sparse(struct vs_device *d, void **base, size_t total_bytes, size_t map_offset, size_t map_bytes)
{
	struct cpu_priv *p = d->priv;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), lo, hi, total;
	struct cpu_sparse *rec;
	unsigned char *r;
	int err;

	if ((err = vs_device_sparse_range(total_bytes, map_offset, map_bytes)))
		return err;
	lo = map_offset / page * page;
	hi = (map_offset + map_bytes + page - 1) / page * page;
	total = (total_bytes + page - 1) / page * page; /* >= hi, and >= page as map_bytes > 0 */
	rec = calloc(1, sizeof(*rec));
	VS_CHECK_ALLOC(rec);
	r = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED) {
		free(rec);
		return vs_error(VS_ENOMEM, "sparse buffer: cannot reserve %zu bytes of address space: %s", total,
				strerror(errno));
	}
	if (mprotect(r, page, PROT_READ | PROT_WRITE) != 0 || mprotect(r + lo, hi - lo, PROT_READ | PROT_WRITE) != 0) {
		int e = errno;

		munmap(r, total);
		free(rec);
		return vs_error(VS_ENOMEM, "sparse buffer: cannot map %zu bytes at offset %zu of %zu: %s", hi - lo, lo,
				total, strerror(e));
	}
	rec->base = r;
	rec->bytes = total;
	rec->next = p->sparse;
	p->sparse = rec;
	*base = r;
	return 0;
}

static void cpu_free_sparse(struct vs_device *d, void *base)
{
	struct cpu_priv *p = d->priv;

	if (!base)
		return;
	for (struct cpu_sparse **pp = &p->sparse; *pp; pp = &(*pp)->next) {
		struct cpu_sparse *rec = *pp;

		if (rec->base == base) {
			munmap(rec->base, rec->bytes);
			*pp = rec->next;
			free(rec);
			return;
		}
	}
}

static int cpu_copy(struct vs_device *d, void *dst, const void *src, size_t bytes)
{
	(void)d;
	memcpy(dst, src, bytes);
	return 0;
}

static int cpu_fill(struct vs_device *d, void *dst, int byte, size_t bytes)
{
	(void)d;
	memset(dst, byte, bytes);
	return 0;
}

static int cpu_flush_llc(struct vs_device *d)
{
	struct cpu_priv *p = d->priv;
	static unsigned char counter;

	/* Write every line of a buffer twice the LLC, with a changing value so it is never elided. */
	counter++;
	for (size_t i = 0; i < p->flush_bytes; i += 64)
		p->flush[i] = (unsigned char)(counter + i);
	__asm__ __volatile__("" ::: "memory");
	return 0;
}

static int cpu_timer_begin(struct vs_device *d)
{
	struct cpu_priv *p = d->priv;

	clock_gettime(CLOCK_MONOTONIC, &p->t0);
	return 0;
}

static int cpu_timer_end(struct vs_device *d, double *ms)
{
	struct cpu_priv *p = d->priv;
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	*ms = (double)(t1.tv_sec - p->t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - p->t0.tv_nsec) * 1e-6;
	return 0;
}

static int cpu_sync(struct vs_device *d)
{
	(void)d;
	return 0;
}

static void cpu_release(struct vs_device *d)
{
	struct cpu_priv *p = d->priv;

	if (p) {
		while (p->sparse)
			cpu_free_sparse(d, p->sparse->base);
		free(p->flush);
	}
	free(p);
	d->priv = NULL;
}

static const struct vs_device_ops cpu_ops = {
	.alloc = cpu_alloc,
	.free = cpu_free,
	.upload = cpu_copy,
	.download = cpu_copy,
	.fill = cpu_fill,
	.flush_llc = cpu_flush_llc,
	.timer_begin = cpu_timer_begin,
	.timer_end = cpu_timer_end,
	.synchronize = cpu_sync,
	.alloc_sparse = cpu_alloc_sparse,
	.free_sparse = cpu_free_sparse,
	.release = cpu_release,
};

/* Size of the last-level cache from sysfs (largest cache index of cpu0); 32 MiB if unknown. */
static uint64_t cpu_llc_bytes(void)
{
	uint64_t best = 0;

	for (int i = 0; i < 8; i++) {
		char path[96], buf[32];
		FILE *f;
		unsigned long v;
		char unit = 0;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && sscanf(buf, "%lu%c", &v, &unit) >= 1) {
			uint64_t b = v * (unit == 'K' ? 1024ull : unit == 'M' ? 1048576ull : 1ull);

			best = b > best ? b : best;
		}
		fclose(f);
	}
	return best ? best : 32ull << 20;
}

static void cpu_model_name(char *out, size_t cap)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(out, cap, "unknown CPU");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			colon++;
			while (*colon == ' ')
				colon++;
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(out, cap, "%s", colon);
			break;
		}
	}
	fclose(f);
}

int vs_device_open_cpu(struct vs_device *d)
{
	struct cpu_priv *p = calloc(1, sizeof(*p));
	struct utsname u;

	memset(d, 0, sizeof(*d));
	VS_CHECK_ALLOC(p);
	snprintf(d->info.backend, sizeof(d->info.backend), "cpu");
	cpu_model_name(d->info.name, sizeof(d->info.name));
	if (uname(&u) == 0) {
		snprintf(d->info.arch, sizeof(d->info.arch), "%.31s", u.machine);
		snprintf(d->info.driver, sizeof(d->info.driver), "linux %.50s", u.release);
	}
	d->info.compute_units = (int)sysconf(_SC_NPROCESSORS_ONLN);
	d->info.llc_bytes = cpu_llc_bytes();
	d->info.mem_bytes = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	p->flush_bytes = 2 * d->info.llc_bytes;
	p->flush = malloc(p->flush_bytes);
	if (!p->flush) {
		free(p);
		return vs_error(VS_ENOMEM, "cannot allocate the %zu-byte cache flush buffer",
				(size_t)(2 * d->info.llc_bytes));
	}
	memset(p->flush, 0, p->flush_bytes);
	d->priv = p;
	d->ops = &cpu_ops;
	return 0;
}

int vs_device_sparse_range(size_t total_bytes, size_t map_offset, size_t map_bytes)
{
	if (!map_bytes || map_offset > total_bytes || map_bytes > total_bytes - map_offset)
		return vs_error(VS_EUNSUPPORTED, "sparse buffer: bytes [%zu, +%zu) do not lie in its %zu bytes",
				map_offset, map_bytes, total_bytes);
	return 0;
}

void vs_device_release(struct vs_device *d)
{
	if (d && d->ops && d->ops->release)
		d->ops->release(d);
	if (d)
		memset(d, 0, sizeof(*d));
}
