/*
 * check_device.c - the CPU device's sparse buffers (device.h alloc_sparse): one reserved range
 * whose first page and stored range are read/write memory, the pages between reserved but never
 * backed (PROT_NONE in /proc/self/maps, and a read there faults), released whole by free_sparse;
 * a range that does not fit is refused and leaves nothing mapped.
 */
#include "testutil.h"

#include "device.h"
#include "vs_error.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static struct vs_device dev;
static size_t page;

static void setup(void)
{
	vs_error_set_quiet(1);
	page = (size_t)sysconf(_SC_PAGESIZE);
	ck_assert_int_eq(vs_device_open_cpu(&dev), 0);
	ck_assert_ptr_nonnull(dev.ops->alloc_sparse);
	ck_assert_ptr_nonnull(dev.ops->free_sparse);
}

static void teardown(void)
{
	vs_device_release(&dev);
	vs_error_set_quiet(0);
}

/* The protection ("rw-p", "---p") of the mapping holding addr in /proc/self/maps; "" if none. */
static void prot_at(const void *addr, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uintptr_t a = (uintptr_t)addr;

	out[0] = '\0';
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char prot[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, prot) == 3 && a >= lo && a < hi) {
			memcpy(out, prot, 5);
			break;
		}
	}
	fclose(f);
}

/* 1 if a page is mapped at addr (msync answers ENOMEM for an unmapped one). */
static int mapped(const void *addr)
{
	void *p = (void *)((uintptr_t)addr / page * page);

	return msync(p, page, MS_ASYNC) == 0 ? 1 : (errno == ENOMEM ? 0 : -1);
}

/* The signal a child dies of after reading the byte at addr (0 when it exits normally). */
static int read_signal(const volatile unsigned char *addr)
{
	int st = 0;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		volatile unsigned char x = *addr;

		(void)x;
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

/* The page-offset task's layout (plan.c page-offset-4g): 6 pages of 73728 bytes at page 60000. */
START_TEST(the_cpu_read_sweep_measures_a_plausible_bandwidth)
{
	struct vs_device d;
	double gbps = 0;

	ck_assert_int_eq(vs_device_open_cpu(&d), 0);
	ck_assert_ptr_nonnull(d.ops->read_sweep);
	ck_assert_int_eq(d.ops->read_sweep(&d, &gbps), 0);
	/* a DRAM read over several cores: more than 0.1 GB/s, less than any machine's 10 TB/s */
	ck_assert_msg(gbps > 0.1 && gbps < 10000, "read sweep %g GB/s", gbps);
	vs_device_release(&d);
}
END_TEST

START_TEST(sparse_buffer_backs_its_first_page_and_its_stored_range_only)
{
	const size_t page_bytes = 64 * 576 * 2, off = 60000 * page_bytes, bytes = 6 * page_bytes;
	unsigned char *base = NULL, *stored;
	char prot[5];

	ck_assert_msg(dev.ops->alloc_sparse(&dev, (void **)&base, off + bytes, off, bytes) == 0, "%s",
		      vs_last_error());
	ck_assert_ptr_nonnull(base);
	ck_assert_uint_eq((uintptr_t)base % page, 0);
	stored = base + off;
	/* The first page and every byte of the stored range: read/write memory. */
	base[0] = 1;
	base[page - 1] = 2;
	memset(stored, 0x5a, bytes);
	ck_assert_int_eq(base[0] + base[page - 1], 3);
	ck_assert_int_eq(stored[0], 0x5a);
	ck_assert_int_eq(stored[bytes - 1], 0x5a);
	prot_at(base, prot);
	ck_assert_str_eq(prot, "rw-p");
	prot_at(stored + bytes - 1, prot);
	ck_assert_str_eq(prot, "rw-p");
	/* Between: reserved, never backed; a read faults. */
	prot_at(base + page, prot);
	ck_assert_str_eq(prot, "---p");
	prot_at(stored - 1, prot);
	ck_assert_str_eq(prot, "---p");
	ck_assert_int_eq(read_signal(base + off / 2), SIGSEGV);
	ck_assert_int_eq(read_signal(stored - 1), SIGSEGV);
	ck_assert_int_eq(read_signal(stored + bytes - 1), 0);
	/* free_sparse releases the whole range. */
	dev.ops->free_sparse(&dev, base);
	ck_assert_int_eq(mapped(base), 0);
	ck_assert_int_eq(mapped(base + off / 2), 0);
	ck_assert_int_eq(mapped(stored), 0);
	dev.ops->free_sparse(&dev, NULL);
}
END_TEST

/* A stored range that starts inside the first page, unaligned: one mapped span, all of it usable. */
START_TEST(sparse_buffer_takes_an_unaligned_range_in_its_first_page)
{
	unsigned char *base = NULL;
	char prot[5];

	ck_assert_int_eq(dev.ops->alloc_sparse(&dev, (void **)&base, 16 * page, 100, page + 5), 0);
	memset(base + 100, 7, page + 5);
	ck_assert_int_eq(base[100 + page + 4], 7);
	prot_at(base + 2 * page, prot);
	ck_assert_str_eq(prot, "---p");
	/* released by the device's release (vs_device_release in teardown), or here */
	dev.ops->free_sparse(&dev, base);
	ck_assert_int_eq(mapped(base), 0);
}
END_TEST

START_TEST(sparse_buffer_refuses_a_range_outside_it)
{
	void *base = NULL;

	ck_assert_int_eq(dev.ops->alloc_sparse(&dev, &base, 1 << 20, 1 << 19, (1 << 19) + 1), VS_EUNSUPPORTED);
	ck_assert_msg(strstr(vs_last_error(), "do not lie in its 1048576 bytes"), "%s", vs_last_error());
	ck_assert_ptr_null(base);
	ck_assert_int_eq(dev.ops->alloc_sparse(&dev, &base, 1 << 20, 0, 0), VS_EUNSUPPORTED);
	ck_assert_int_eq(dev.ops->alloc_sparse(&dev, &base, 1 << 20, (size_t)-1, 2), VS_EUNSUPPORTED);
	ck_assert_ptr_null(base);
}
END_TEST

/* Buffers still live when the device is released are unmapped with it. */
START_TEST(device_release_frees_live_sparse_buffers)
{
	unsigned char *a = NULL, *b = NULL;

	ck_assert_int_eq(dev.ops->alloc_sparse(&dev, (void **)&a, 64 * page, 32 * page, page), 0);
	ck_assert_int_eq(dev.ops->alloc_sparse(&dev, (void **)&b, 64 * page, 32 * page, page), 0);
	ck_assert_int_eq(mapped(a + 32 * page), 1);
	vs_device_release(&dev);
	ck_assert_int_eq(mapped(a), 0);
	ck_assert_int_eq(mapped(b + 32 * page), 0);
	ck_assert_int_eq(vs_device_open_cpu(&dev), 0); /* for teardown */
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("sparse");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, the_cpu_read_sweep_measures_a_plausible_bandwidth);
	tcase_add_test(tc, sparse_buffer_backs_its_first_page_and_its_stored_range_only);
	tcase_add_test(tc, sparse_buffer_takes_an_unaligned_range_in_its_first_page);
	tcase_add_test(tc, sparse_buffer_refuses_a_range_outside_it);
	tcase_add_test(tc, device_release_frees_live_sparse_buffers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
