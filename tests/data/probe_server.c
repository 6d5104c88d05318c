/* A known-truth HTTP/1.1 server for tests/probes.rs (built as C, as C++ with g++, and with
 * -DWITH_USDT): one thread, one connection at a time,
 * keep-alive. Each request passes parse() (50 us), handle() (200 us) and respond() (50 us),
 * each a busy wait on CLOCK_MONOTONIC so that its time is what it says, then finish() and
 * the response's write. The functions are not inlined, so that probes see each one.
 * Prints its port on stdout, then serves until killed. Usage: probe_server [PARSE HANDLE RESPOND] (us) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long parse_us = 50, handle_us = 200, respond_us = 50;

/* -DWITH_USDT: two USDT probes, probe_server:request__start and probe_server:request__done,
 * written as <sys/sdt.h> writes them on x86-64 (a nop, and its note in .note.stapsdt), so
 * that no systemtap header is needed. */
#ifdef WITH_USDT
#define USDT(provider, name)                                                                 \
    __asm__ __volatile__("990: nop\n"                                                         \
                         ".pushsection .note.stapsdt,\"?\",\"note\"\n"                        \
                         ".balign 4\n"                                                        \
                         ".4byte 992f-991f, 994f-993f, 3\n"                                   \
                         "991: .asciz \"stapsdt\"\n"                                         \
                         "992: .balign 4\n"                                                   \
                         "993: .8byte 990b\n"                                                 \
                         ".8byte _.stapsdt.base\n"                                            \
                         ".8byte 0\n"                                                         \
                         ".asciz \"" #provider "\"\n"                                         \
                         ".asciz \"" #name "\"\n"                                             \
                         ".asciz \"\"\n"                                                      \
                         "994: .balign 4\n"                                                   \
                         ".popsection\n"                                                      \
                         ".ifndef _.stapsdt.base\n"                                           \
                         ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n" \
                         ".weak _.stapsdt.base\n"                                             \
                         ".hidden _.stapsdt.base\n"                                           \
                         "_.stapsdt.base: .space 1\n"                                         \
                         ".size _.stapsdt.base, 1\n"                                          \
                         ".popsection\n"                                                      \
                         ".endif\n")
#else
#define USDT(provider, name)
#endif

static void spin(long us) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < us * 1000L);
}

__attribute__((noinline)) void parse(void) { spin(parse_us); }
__attribute__((noinline)) void handle(void) { spin(handle_us); }
__attribute__((noinline)) void respond(void) { spin(respond_us); }
__attribute__((noinline)) void finish(void) { __asm__ volatile(""); }

int main(int argc, char **argv) {
    if (argc == 4) {
        parse_us = atol(argv[1]);
        handle_us = atol(argv[2]);
        respond_us = atol(argv[3]);
    }
    int l = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 64) ||
        getsockname(l, (struct sockaddr *)&a, &n))
        return 1;
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    char buf[8192];
    for (;;) {
        int c = accept(l, NULL, NULL);
        if (c < 0)
            continue;
        size_t have = 0;
        for (;;) {
            ssize_t r = recv(c, buf + have, sizeof buf - have - 1, 0);
            if (r <= 0)
                break;
            have += (size_t)r;
            buf[have] = 0;
            char *end;
            while ((end = strstr(buf, "\r\n\r\n")) != NULL) {
                USDT(probe_server, request__start);
                parse();
                handle();
                respond();
                finish();
                USDT(probe_server, request__done);
                if (send(c, ok, sizeof ok - 1, 0) < 0)
                    break;
                size_t used = (size_t)(end + 4 - buf);
                memmove(buf, buf + used, have - used + 1);
                have -= used;
            }
        }
        close(c);
    }
}
