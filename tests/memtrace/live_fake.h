/* A live stream written by a test from the format's description (docs/trace-format.md, "The
 * live stream"), not with the runtime's code: the ring's shared file, HELLO with it on the
 * socket, and messages copied into the ring. Include after cmocka.h. */
#pragma once

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kFakeControl = 4096 };

/* A shared file of `file_bytes` (the control page, then the ring), mapped; its descriptor in *fd. */
static inline unsigned char *fake_ring(size_t file_bytes, int *fd) {
    *fd = memfd_create("fake-ring", MFD_CLOEXEC);
    assert_true(*fd >= 0);
    assert_int_equal(ftruncate(*fd, (off_t)file_bytes), 0);
    unsigned char *map = mmap(NULL, file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    assert_true(map != MAP_FAILED);
    return map;
}

/* HELLO (version 1, 32-byte records) with the ring's file attached. */
static inline void fake_hello(int sock, int ring_fd) {
    const uint32_t hello[4] = {1, 0x564c4453, 1, 32};
    char control[CMSG_SPACE(sizeof(int))] __attribute__((aligned(8))) = {0};
    struct iovec iov = {.iov_base = (void *)hello, .iov_len = sizeof hello};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    *CMSG_FIRSTHDR(&mh) = (struct cmsghdr){
        .cmsg_len = CMSG_LEN(sizeof(int)), .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS};
    memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &ring_fd, sizeof ring_fd);
    assert_int_equal(sendmsg(sock, &mh, 0), (ssize_t)sizeof hello);
}
