/*
 * device_cpu.c - the host CPU as a vs_device: malloc'd buffers, monotonic clock, LLC flush. Sparse
 * buffers are a PROT_NONE reservation of the whole range (address space only: no memory, no swap)
 * whose first page and stored range are made readable and writable.
 */
#include "device.h"
#include "mla_decode.h"
#include "vs_error.h"

#include <errno.h>
#include <pthread.h>
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

/* One reader of the sweep: sums its slice with 64-bit loads (the sum is kept: nothing is elided). */
struct sweep_job {
	const uint64_t *p;
	size_t n;
	uint64_t sum;
};

static void *sweep_run(void *arg)
{
	struct sweep_job *j = arg;
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i = 0;

	for (; i + 4 <= j->n; i += 4) {
		s0 += j->p[i];
		s1 += j->p[i + 1];
		s2 += j->p[i + 2];
		s3 += j->p[i + 3];
	}
	for (; i < j->n; i++)
		s0 += j->p[i];
	j->sum = s0 + s1 + s2 + s3;
	return NULL;
}

static int cpu_read_sweep(struct vs_device *d, double *gbps)
{
	enum { MAX_READERS = 256 };
	size_t bytes = (size_t)(d->info.llc_bytes * 8 > (256u << 20) ? d->info.llc_bytes * 8 : (256u << 20));
	int nthreads = d->info.compute_units > 0 ? d->info.compute_units : 1;
	uint64_t *buf = malloc(bytes), check = 0;
	double best = 0;

	if (!buf)
		return vs_error(VS_ENOMEM, "out of memory for the read sweep (%zu bytes)", bytes);
	nthreads = nthreads > MAX_READERS ? MAX_READERS : nthreads;
	memset(buf, 1, bytes);
	for (int pass = 0; pass < 3; pass++) {
		struct sweep_job jobs[MAX_READERS];
		pthread_t tid[MAX_READERS];
		int started[MAX_READERS];
		size_t words = bytes / 8, per = (words + (size_t)nthreads - 1) / (size_t)nthreads;
		struct timespec t0, t1;
		double s;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int k = 0; k < nthreads; k++) {
			size_t b = (size_t)k * per < words ? (size_t)k * per : words;

			jobs[k] = (struct sweep_job){buf + b, b + per < words ? per : words - b, 0};
			started[k] = pthread_create(&tid[k], NULL, sweep_run, &jobs[k]) == 0;
			if (!started[k])
				sweep_run(&jobs[k]);
		}
		for (int k = 0; k < nthreads; k++) {
			if (started[k])
				pthread_join(tid[k], NULL);
			check += jobs[k].sum;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
		if (s > 0 && (double)bytes / s / 1e9 > best)
			best = (double)bytes / s / 1e9;
	}
	free(buf);
	/* every word read holds 0x0101010101010101: the sums prove the reads happened */
	if (check != 3 * (uint64_t)(bytes / 8) * 0x0101010101010101ull)
		return vs_error(VS_EDEVICE, "the read sweep summed %llu, not what it wrote", (unsigned long long)check);
	*gbps = best;
	return 0;
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
	.read_sweep = cpu_read_sweep,
};

double vs_device_peak_tflops(const char *gen, int32_t kv_dtype)
{
	/* dense tensor TFLOP/s by datasheet: H100/H200 SXM, B200, MI300X, MI355X */
	static const struct {
		const char *gen;
		double bf16, fp8;
	} peaks[] = {
		{"sm_90", 989.4, 1978.9},   {"sm_90a", 989.4, 1978.9},  {"sm_100", 2250.0, 4500.0},
		{"gfx942", 1307.4, 2614.9}, {"gfx950", 2516.6, 5033.2},
	};
	int fp8 = kv_dtype != MLA_KV_BF16;

	for (size_t i = 0; gen && i < sizeof(peaks) / sizeof(peaks[0]); i++)
		if (!strcmp(peaks[i].gen, gen))
			return fp8 ? peaks[i].fp8 : peaks[i].bf16;
	return 0;
}

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
