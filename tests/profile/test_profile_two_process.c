/* Two processes share a profile buffer: the parent creates it (a file, then a memfd) and
 * counts; a child (this program re-executed with --child) maps it with
 * sonde_profile_buffer_open_shared and reads the counters while the parent writes. The two
 * synchronise only through pipes: a command byte down, a fixed-size answer up.
 * Misuse across the two: one process cuts the file under the other's mapping (every call
 * answers SONDE_STATUS_ERROR_FORMAT, nothing faults), and a reader killed mid-way leaves the
 * writer unaffected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/profile.h>

#define RECORDS 4
#define BUCKETS 2
#define RACE_ITERS 2000000u

/* Answer of the child to 'r' (read) and 'm' (monitor): sums of field 0 of every record,
 * how many samples it took and whether any sample went backwards. */
typedef struct answer_t {
    int32_t status;
    uint32_t regressions;
    uint64_t samples;
    uint64_t sums[RECORDS];
} answer_t;

static int read_full(int fd, void *buf, size_t n) {
    unsigned char *p = buf;
    while (n > 0) {
        const ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r, n -= (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n) {
    const unsigned char *p = buf;
    while (n > 0) {
        const ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r, n -= (size_t)r;
    }
    return 0;
}

static void child_sums(sonde_profile_array_t *arr, sonde_profile_buffer_t *pb, answer_t *a) {
    for (uint32_t r = 0; r < RECORDS; ++r)
        if (sonde_profile_array_sum_u64(arr, pb, r, 0, &a->sums[r]) != SONDE_STATUS_SUCCESS) a->status = 1;
}

/* The reader process. Exit status 0 when every step worked. */
static int child_main(const char *path, int cmd_fd, int ans_fd) {
    sonde_profile_buffer_t *pb = NULL;
    sonde_profile_array_t *arr = NULL;
    uint32_t n = 0;
    if (sonde_profile_buffer_open_shared(path, &pb) != SONDE_STATUS_SUCCESS) return 10;
    if (sonde_profile_buffer_num_arrays(pb, &n) != SONDE_STATUS_SUCCESS || n != 1) return 11;
    if (sonde_profile_array_open(pb, 0, &arr) != SONDE_STATUS_SUCCESS) return 12;
    if (sonde_profile_array_num_records(arr) != RECORDS ||
        sonde_profile_array_num_thread_buckets(arr) != BUCKETS)
        return 13;
    for (;;) {
        char cmd = 0;
        if (read_full(cmd_fd, &cmd, 1) != 0) return 14;
        answer_t a;
        memset(&a, 0, sizeof a);
        if (cmd == 'q') break;
        if (cmd == 'r') {
            child_sums(arr, pb, &a);
            a.samples = 1;
        } else if (cmd == 'c') {
            /* The parent cut the file: every call must refuse, none may fault. */
            uint64_t s = 0, rec[2];
            if (sonde_profile_array_sum_u64(arr, pb, 0, 0, &s) != SONDE_STATUS_ERROR_FORMAT ||
                sonde_profile_array_read(arr, pb, rec, 0, 1, 0) != SONDE_STATUS_ERROR_FORMAT ||
                sonde_profile_buffer_num_arrays(pb, &n) != SONDE_STATUS_ERROR_FORMAT)
                a.status = 1;
            a.samples = 1;
        } else if (cmd == 'm') {
            /* Sample record 0 until the parent says its writer is done. */
            const char ready = 'k';
            if (write_full(ans_fd, &ready, 1) != 0) return 15;
            uint64_t prev = 0;
            struct pollfd pfd = {cmd_fd, POLLIN, 0};
            for (;;) {
                uint64_t s = 0;
                if (sonde_profile_array_sum_u64(arr, pb, 0, 0, &s) != SONDE_STATUS_SUCCESS) a.status = 1;
                if (s < prev) a.regressions++;
                prev = s;
                a.samples++;
                if (poll(&pfd, 1, 0) == 1) break;
            }
            if (read_full(cmd_fd, &cmd, 1) != 0 || cmd != 'd') return 16;
            child_sums(arr, pb, &a);
        } else {
            return 17;
        }
        if (write_full(ans_fd, &a, sizeof a) != 0) return 18;
    }
    sonde_profile_array_destroy(arr);
    sonde_profile_buffer_destroy(pb);
    return 0;
}

/* The cutting process: maps the buffer, cuts the file to nothing through its own descriptor,
 * and checks that its own calls refuse. */
static int cut_main(const char *path) {
    sonde_profile_buffer_t *pb = NULL;
    sonde_profile_array_t *arr = NULL;
    uint64_t s = 0;
    int fd = -1;
    if (sonde_profile_buffer_open_shared(path, &pb) != SONDE_STATUS_SUCCESS) return 20;
    if (sonde_profile_array_open(pb, 0, &arr) != SONDE_STATUS_SUCCESS) return 21;
    if (sonde_profile_array_sum_u64(arr, pb, 0, 0, &s) != SONDE_STATUS_SUCCESS) return 22;
    if (sonde_profile_buffer_fd(pb, &fd) != SONDE_STATUS_SUCCESS || ftruncate(fd, 0) != 0) return 23;
    if (sonde_profile_array_sum_u64(arr, pb, 0, 0, &s) != SONDE_STATUS_ERROR_FORMAT) return 24;
    sonde_profile_array_destroy(arr);
    sonde_profile_buffer_destroy(pb);
    return 0;
}

static char g_self[4096];

typedef struct peer_t {
    pid_t pid;
    int cmd_fd, ans_fd;
} peer_t;

static peer_t spawn_child(const char *path) {
    int down[2], up[2];
    assert_int_equal(pipe(down), 0);
    assert_int_equal(pipe(up), 0);
    peer_t p;
    p.pid = fork();
    assert_true(p.pid >= 0);
    if (p.pid == 0) {
        char cfd[16], afd[16];
        snprintf(cfd, sizeof cfd, "%d", down[0]);
        snprintf(afd, sizeof afd, "%d", up[1]);
        close(down[1]);
        close(up[0]);
        execl(g_self, g_self, "--child", path, cfd, afd, (char *)NULL);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    p.cmd_fd = down[1];
    p.ans_fd = up[0];
    return p;
}

static answer_t ask(const peer_t *p, char cmd) {
    answer_t a;
    assert_int_equal(write_full(p->cmd_fd, &cmd, 1), 0);
    assert_int_equal(read_full(p->ans_fd, &a, sizeof a), 0);
    assert_int_equal(a.status, 0);
    return a;
}

static void finish(const peer_t *p) {
    const char q = 'q';
    assert_int_equal(write_full(p->cmd_fd, &q, 1), 0);
    close(p->cmd_fd);
    close(p->ans_fd);
    int status = -1;
    assert_int_equal(waitpid(p->pid, &status, 0), p->pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* The parent writes, the child reads: rounds of exact values, then a race. */
static void run_parent(sonde_profile_buffer_t *pb, const char *child_path) {
    sonde_profile_array_t *arr = NULL;
    assert_int_equal(sonde_profile_array_create(16, RECORDS, BUCKETS, 64, &arr), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(arr, pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_initialize(arr, pb), SONDE_STATUS_SUCCESS);
    sonde_profile_view_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    assert_int_equal(sonde_profile_array_view(arr, pb, &v), SONDE_STATUS_SUCCESS);

    const peer_t child = spawn_child(child_path);
    answer_t a = ask(&child, 'r');
    for (int r = 0; r < RECORDS; ++r) assert_int_equal(a.sums[r], 0);

    uint64_t expect[RECORDS] = {0};
    for (uint32_t round = 1; round <= 5; ++round) {
        for (uint32_t r = 0; r < RECORDS; ++r) {
            sonde_profile_view_add_u64(&v, r, 0, round * (r + 1));
            expect[r] += round * (r + 1);
        }
        /* a value in the other bucket as well */
        uint64_t rec[2] = {round, 0};
        assert_int_equal(sonde_profile_array_write(arr, pb, rec, 3, 1, (v.bucket + 1) % BUCKETS),
                         SONDE_STATUS_SUCCESS);
        a = ask(&child, 'r');
        for (uint32_t r = 0; r < RECORDS; ++r) assert_int_equal(a.sums[r], expect[r] + (r == 3 ? round : 0));
    }

    /* Race: the child samples while this thread counts; its samples never go backwards, and
     * after 'd' it sees the exact final count. */
    const char m = 'm', d = 'd';
    char ready = 0;
    assert_int_equal(write_full(child.cmd_fd, &m, 1), 0);
    assert_int_equal(read_full(child.ans_fd, &ready, 1), 0);
    assert_int_equal(ready, 'k');
    for (uint32_t i = 0; i < RACE_ITERS; ++i) sonde_profile_view_add_u64(&v, 0, 0, 1);
    assert_int_equal(write_full(child.cmd_fd, &d, 1), 0);
    assert_int_equal(read_full(child.ans_fd, &a, sizeof a), 0);
    assert_int_equal(a.status, 0);
    assert_int_equal(a.regressions, 0);
    assert_true(a.samples >= 1);
    assert_int_equal(a.sums[0], expect[0] + RACE_ITERS);
    finish(&child);
    sonde_profile_array_destroy(arr);
}

static void test_file(void **state) {
    (void)state;
    char dir[] = "/tmp/sonde-profile-2p-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/counters.prof", dir);
    sonde_profile_buffer_t *pb = NULL;
    assert_int_equal(sonde_profile_buffer_create_shared(path, 1 << 16, &pb), SONDE_STATUS_SUCCESS);
    run_parent(pb, path);
    sonde_profile_buffer_destroy(pb);
    unlink(path);
    rmdir(dir);
}

static void test_memfd(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = NULL;
    assert_int_equal(sonde_profile_buffer_create_shared(NULL, 1 << 16, &pb), SONDE_STATUS_SUCCESS);
    int fd = -1;
    assert_int_equal(sonde_profile_buffer_fd(pb, &fd), SONDE_STATUS_SUCCESS);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getpid(), fd);
    run_parent(pb, path);
    sonde_profile_buffer_destroy(pb);
}

/* A file buffer and one array of RECORDS records with record 0 at `value` in bucket 0. */
static sonde_profile_buffer_t *make_file_buffer(char *dir, char *path, size_t path_size,
                                                sonde_profile_array_t **arr, uint64_t value) {
    assert_non_null(mkdtemp(dir));
    snprintf(path, path_size, "%s/counters.prof", dir);
    sonde_profile_buffer_t *pb = NULL;
    assert_int_equal(sonde_profile_buffer_create_shared(path, 1 << 16, &pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_create(16, RECORDS, BUCKETS, 64, arr), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(*arr, pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_initialize(*arr, pb), SONDE_STATUS_SUCCESS);
    const uint64_t rec[2] = {value, 0};
    assert_int_equal(sonde_profile_array_write(*arr, pb, rec, 0, 1, 0), SONDE_STATUS_SUCCESS);
    return pb;
}

/* Another process cuts the file under the creator's mapping. */
static void test_cut_by_reader(void **state) {
    (void)state;
    char dir[] = "/tmp/sonde-profile-2p-XXXXXX";
    char path[128];
    sonde_profile_array_t *arr = NULL;
    sonde_profile_buffer_t *pb = make_file_buffer(dir, path, sizeof path, &arr, 5);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(g_self, g_self, "--cut", path, (char *)NULL);
        _exit(127);
    }
    int status = -1;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    uint64_t s = 0, rec[2], snap[BUCKETS * 64 / 8];
    assert_int_equal(sonde_profile_array_sum_u64(arr, pb, 0, 0, &s), SONDE_STATUS_ERROR_FORMAT);
    assert_int_equal(sonde_profile_array_read(arr, pb, rec, 0, 1, 0), SONDE_STATUS_ERROR_FORMAT);
    assert_int_equal(sonde_profile_array_write(arr, pb, rec, 0, 1, 0), SONDE_STATUS_ERROR_FORMAT);
    assert_int_equal(sonde_profile_array_snapshot(arr, pb, snap, sizeof snap), SONDE_STATUS_ERROR_FORMAT);
    assert_int_equal(sonde_profile_array_initialize(arr, pb), SONDE_STATUS_ERROR_FORMAT);
    sonde_profile_array_destroy(arr);
    sonde_profile_buffer_destroy(pb);
    unlink(path);
    rmdir(dir);
}

/* The creator cuts the file under a reader that keeps it mapped. */
static void test_cut_under_reader(void **state) {
    (void)state;
    char dir[] = "/tmp/sonde-profile-2p-XXXXXX";
    char path[128];
    sonde_profile_array_t *arr = NULL;
    sonde_profile_buffer_t *pb = make_file_buffer(dir, path, sizeof path, &arr, 9);
    const peer_t child = spawn_child(path);
    answer_t a = ask(&child, 'r');
    assert_int_equal(a.sums[0], 9);
    assert_int_equal(truncate(path, SONDE_PROFILE_SHARED_HEADER_SIZE), 0);
    ask(&child, 'c');
    finish(&child);
    sonde_profile_array_destroy(arr);
    sonde_profile_buffer_destroy(pb);
    unlink(path);
    rmdir(dir);
}

/* A reader killed while it has the buffer mapped costs the writer nothing: no call waits for
 * it and the counters go on. */
static void test_reader_killed(void **state) {
    (void)state;
    char dir[] = "/tmp/sonde-profile-2p-XXXXXX";
    char path[128];
    sonde_profile_array_t *arr = NULL;
    sonde_profile_buffer_t *pb = make_file_buffer(dir, path, sizeof path, &arr, 3);
    const peer_t child = spawn_child(path);
    ask(&child, 'r');
    assert_int_equal(kill(child.pid, SIGKILL), 0);
    int status = -1;
    assert_int_equal(waitpid(child.pid, &status, 0), child.pid);
    assert_true(WIFSIGNALED(status));
    close(child.cmd_fd);
    close(child.ans_fd);
    sonde_profile_view_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    assert_int_equal(sonde_profile_array_view(arr, pb, &v), SONDE_STATUS_SUCCESS);
    for (int i = 0; i < 1000; ++i) sonde_profile_view_add_u64(&v, 0, 0, 1);
    uint64_t s = 0;
    assert_int_equal(sonde_profile_array_sum_u64(arr, pb, 0, 0, &s), SONDE_STATUS_SUCCESS);
    assert_int_equal(s, 3 + 1000); /* 3 in bucket 0, 1000 in this thread's bucket */
    sonde_profile_array_destroy(arr);
    sonde_profile_buffer_destroy(pb);
    unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc == 3 && strcmp(argv[1], "--cut") == 0) return cut_main(argv[2]);
    const ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (n <= 0) return 1;
    g_self[n] = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file),          cmocka_unit_test(test_memfd),
        cmocka_unit_test(test_cut_by_reader), cmocka_unit_test(test_cut_under_reader),
        cmocka_unit_test(test_reader_killed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
