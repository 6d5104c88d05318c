/* A known-truth server for the accuracy of reqlife's server-side join (issue 45, point 7):
 * it measures by itself, per request, what the eBPF probes measure, and logs it keyed by the
 * bytes the request took on its TCP connection (the client's `tx_end`).
 *
 * Build: cc -O2 -Wall -Wextra -o truth_server truth_server.c   (Linux, libc only)
 * Usage: truth_server [--delay-us N | --delay-us-every SLOW_US:EVERY:FAST_US] [--log FILE]
 *   Binds 127.0.0.1:0, prints its port on stdout (one line), serves until SIGTERM/SIGINT
 *   (then flushes the log and exits 0). One thread, epoll, non-blocking sockets.
 *   Each request busy-waits its delay on CLOCK_MONOTONIC: --delay-us N fixed;
 *   --delay-us-every 3000:100:20: every 100th request the process serves takes 3000 us, the
 *   others 20 us; default: uniform in 50..300 us from a fixed seed.
 *
 * Protocols, told apart by a connection's first bytes:
 *   h1: HTTP/1.1, keep-alive and pipelining, bodies by Content-Length; 200 "ok".
 *   h2: HTTP/2 cleartext with prior knowledge; a request is a stream whose HEADERS (with its
 *       CONTINUATIONs) or last DATA frame carried END_STREAM; answered with HEADERS 0x88
 *       (:status 200) and DATA "ok" END_STREAM, in one send(). HPACK is not decoded.
 *   ws: WebSocket (RFC 6455) after an HTTP/1.1 upgrade; each text or binary message is a
 *       request, echoed in one unmasked frame.
 *
 * The log (--log FILE), one line per request (not for the HTTP/2 preface and settings, nor
 * the WebSocket upgrade), space-separated:
 *   proto client_port req_end_off arrival_ns read_ns write_start_ns delay_ns
 *   proto        h1, h2 or ws
 *   client_port  the peer's port
 *   req_end_off  offset, in the bytes received on this connection from its first byte
 *                (preface, upgrade request and all), just past the request's last byte: the
 *                end of its head or body (h1), of the frame that ended it (h2: the frame with
 *                END_STREAM, or the CONTINUATION that ended a header block with END_STREAM),
 *                of its message's last frame (ws); reqlife's `tx_end`.
 *   arrival_ns   the SO_TIMESTAMPNS stamp of the recvmsg() that returned its last byte,
 *                turned into CLOCK_MONOTONIC ns (0: the kernel gave no stamp)
 *   read_ns      CLOCK_MONOTONIC right after that recvmsg() returned
 *   write_start_ns CLOCK_MONOTONIC right before the send() of its response
 *   delay_ns     the delay it busy-waited (the target; the wait overshoots it by the cost of
 *                one clock read)
 * Requests that end in one read share its arrival_ns and read_ns; their read->write
 * (write_start_ns - read_ns) holds the requests served before them in that read.
 *
 * Where these figures can differ from the kernel's (the probes'):
 * - A read's stamp is the arrival of the newest segment the read copied from (TCP keeps the
 *   newest stamp when it coalesces segments, and recvmsg reports the last one it copied): a
 *   request that ends in an earlier segment of a read that holds several gets a later arrival
 *   than its own last byte had, so its socket time here is too short (a test: a request
 *   written 30 ms before the next, both read in one read behind a 100 ms request, was logged
 *   55 ms late). On loopback one send() of up to 64 KiB is one segment, so this needs a
 *   client whose separate writes the server reads together (pipelining or HTTP/2 streams
 *   written apart while the server is busy). truth_check.py counts these requests and gives
 *   the socket figures without them too.
 * - The kernel stamps a packet when it enters IP's local delivery (netif_rx when TCP left no
 *   departure time on it), a step before TCP queues it and wakes the reader, where a probe
 *   may stamp it; on loopback both happen in the sender's send(), in one softirq pass.
 * - client_port comes from accept()'s peer address (what getpeername() gives).
 * - A response that cannot be sent at once (the socket's send buffer full, or HTTP/2's
 *   connection window spent) is sent later, with those queued before it, in one send();
 *   its write_start_ns is that send's.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_BYTES (256 * 1024)      /* one recvmsg's buffer (>= 64 KiB) */
#define HEAD_MAX (64 * 1024)         /* an HTTP/1.1 head longer than this is refused */
#define OUT_PAUSE (4 * 1024 * 1024)  /* stop reading a connection with this much unsent */
#define WS_MAX (16 * 1024 * 1024)    /* a WebSocket message longer than this is refused */
#define H2_FRAME_MAX 16384           /* SETTINGS_MAX_FRAME_SIZE's default, not raised */
#define H2_WIN_MAX 2147483647LL      /* the largest flow-control window */
#define H2_OPEN_MAX 1000             /* streams with a body still to come, per connection */
#ifndef LOG_BYTES
#define LOG_BYTES (16 * 1024 * 1024) /* the log's buffer */
#endif

static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"; /* 24 bytes */
static const char H1_OK[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

enum proto { P_NEW, P_H1, P_H2, P_WS };
static const char *const PROTO_NAME[] = {"?", "h1", "h2", "ws"};

/* A response of HTTP/2's held back by the connection's send window. */
struct h2_held {
    uint32_t stream;
    uint64_t end_off, arrival_ns, read_ns, delay_ns;
};

struct conn {
    int fd;
    enum proto proto;
    uint16_t port;
    uint32_t events;   /* the epoll mask registered */
    int closing;       /* after the output drains: shut down writing, discard input */
    int shut;          /* writing shut down: wait for the peer's end */
    uint64_t rx_total; /* bytes received on the connection so far */
    uint64_t arrival_ns, read_ns; /* the last read's stamps */
    unsigned char *in; /* bytes received and not yet used (a partial request or frame) */
    size_t in_len, in_cap;
    unsigned char *out; /* bytes not yet sent */
    size_t out_len, out_cap;
    /* h1 */
    size_t scan;        /* where the search for the head's end resumes in `in` */
    uint64_t body_left; /* body bytes still to come */
    int close_after;    /* Connection: close or HTTP/1.0 */
    /* h2 */
    int64_t send_win, recv_win;
    uint32_t last_stream, cont_stream;
    int cont_end_stream;
    uint32_t *open;
    size_t open_len, open_cap;
    struct h2_held *held;
    size_t held_len, held_cap;
    /* ws */
    unsigned char *msg;
    size_t msg_len, msg_cap;
    int msg_op; /* the message's opcode, 0 when none is being assembled */
};

static int ep;
static volatile sig_atomic_t stop;

static int64_t delay_fixed_us = -1;
static int64_t slow_us = -1, every = 0, fast_us = 0;
static uint64_t served; /* requests served by the process */
static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static int log_fd = -1;
static char *log_buf;
static size_t log_len;

/* ---- clocks ---------------------------------------------------------------------------- */

static uint64_t ts_ns(const struct timespec *t) {
    return (uint64_t)t->tv_sec * 1000000000ULL + (uint64_t)t->tv_nsec;
}

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return ts_ns(&t);
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC, ns. The kernel keeps both clocks from one timekeeper:
 * CLOCK_REALTIME is CLOCK_MONOTONIC plus an offset, and NTP's frequency slewing changes the
 * rate they share, not the offset. The offset moves only when the wall clock is stepped
 * (settimeofday, clock_settime, adjtimex's ADJ_SETOFFSET, a leap second). So one reading of
 * the offset holds for the whole run to within how well it was read: the realtime read is
 * bracketed by two monotonic reads, and of 64 tries the tightest bracket (a vDSO call is
 * 20-40 ns, so the bracket is under 100 ns) is kept, its middle taken: the conversion is good
 * to well under a microsecond. The offset is read again every second, so that a step of
 * the wall clock during a run costs at most the requests of that second. */
static int64_t real_minus_mono;
static uint64_t offset_read_at;

static void read_offset(int tries) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < tries; i++) {
        struct timespec a, r, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_REALTIME, &r);
        clock_gettime(CLOCK_MONOTONIC, &b);
        uint64_t width = ts_ns(&b) - ts_ns(&a);
        if (width < best) {
            best = width;
            real_minus_mono = (int64_t)(ts_ns(&r) - (ts_ns(&a) + width / 2));
        }
    }
    offset_read_at = mono_ns();
}

static void spin_ns(uint64_t ns) {
    uint64_t until = mono_ns() + ns;
    while (mono_ns() < until) {
    }
}

static uint64_t next_delay_ns(void) {
    served++;
    if (delay_fixed_us >= 0)
        return (uint64_t)delay_fixed_us * 1000;
    if (slow_us >= 0)
        return (uint64_t)(served % (uint64_t)every == 0 ? slow_us : fast_us) * 1000;
    rng ^= rng >> 12; /* xorshift64* */
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (50 + (rng * 0x2545F4914F6CDD1DULL >> 33) % 251) * 1000;
}

/* ---- the log --------------------------------------------------------------------------- */

static void log_flush(void) {
    size_t done = 0;
    while (done < log_len) {
        ssize_t w = write(log_fd, log_buf + done, log_len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fprintf(stderr, "truth_server: writing the log: %s\n", strerror(errno));
            exit(1);
        }
        done += (size_t)w;
    }
    log_len = 0;
}

static void log_u64(uint64_t v, char end) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        log_buf[log_len++] = tmp[--n];
    log_buf[log_len++] = end;
}

static void log_request(const struct conn *c, uint64_t end_off, uint64_t arrival_ns,
                        uint64_t read_ns, uint64_t write_ns, uint64_t delay_ns) {
    if (log_fd < 0)
        return;
    if (log_len > LOG_BYTES - 256)
        log_flush();
    memcpy(log_buf + log_len, PROTO_NAME[c->proto], 2);
    log_len += 2;
    log_buf[log_len++] = ' ';
    log_u64(c->port, ' ');
    log_u64(end_off, ' ');
    log_u64(arrival_ns, ' ');
    log_u64(read_ns, ' ');
    log_u64(write_ns, ' ');
    log_u64(delay_ns, '\n');
}

/* ---- buffers and output ---------------------------------------------------------------- */

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n);
    if (!p) {
        fprintf(stderr, "truth_server: out of memory\n");
        exit(1);
    }
    return p;
}

static void append(unsigned char **buf, size_t *len, size_t *cap, const void *src, size_t n) {
    if (*len + n > *cap) {
        size_t cap2 = *cap ? *cap : 256;
        while (cap2 < *len + n)
            cap2 *= 2;
        *buf = xrealloc(*buf, cap2);
        *cap = cap2;
    }
    memcpy(*buf + *len, src, n);
    *len += n;
}

/* Sends what is queued; returns -1 when the connection is broken. */
static int flush_out(struct conn *c) {
    while (c->out_len) {
        ssize_t w = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (w < 0)
            return -1;
        memmove(c->out, c->out + w, c->out_len - (size_t)w);
        c->out_len -= (size_t)w;
    }
    return 0;
}

/* Writes `n` bytes with one send() (behind what is queued, if anything is); returns
 * CLOCK_MONOTONIC right before that send(), or 0 when the connection is broken (it is then
 * closing). */
static uint64_t write_bytes(struct conn *c, const void *p, size_t n) {
    uint64_t t;
    if (c->out_len) {
        append(&c->out, &c->out_len, &c->out_cap, p, n);
        t = mono_ns();
        if (flush_out(c) < 0)
            goto broken;
        return t;
    }
    ssize_t w;
    do {
        t = mono_ns();
        w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (w < 0 && errno == EINTR);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        goto broken;
    if (w < 0)
        w = 0;
    if ((size_t)w < n)
        append(&c->out, &c->out_len, &c->out_cap, (const char *)p + w, n - (size_t)w);
    return t;
broken:
    c->closing = 1;
    c->shut = 1;
    c->out_len = 0;
    return 0;
}

/* One request's delay and response, and its log line. */
static void serve(struct conn *c, uint64_t end_off, const void *resp, size_t n) {
    uint64_t delay = next_delay_ns();
    spin_ns(delay);
    uint64_t t = write_bytes(c, resp, n);
    if (t)
        log_request(c, end_off, c->arrival_ns, c->read_ns, t, delay);
}

/* ---- HTTP/1.1 -------------------------------------------------------------------------- */

static void h1_error(struct conn *c, const char *status) {
    char resp[128];
    int n = snprintf(resp, sizeof resp,
                     "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status);
    write_bytes(c, resp, (size_t)n);
    c->closing = 1;
}

static int ieq(const unsigned char *a, size_t n, const char *b) {
    return strlen(b) == n && strncasecmp((const char *)a, b, n) == 0;
}

static int icontains(const unsigned char *a, size_t n, const char *b) {
    size_t m = strlen(b);
    for (size_t i = 0; i + m <= n; i++)
        if (strncasecmp((const char *)a + i, b, m) == 0)
            return 1;
    return 0;
}

static void ws_accept_key(const unsigned char *key, size_t n, char out[29]);

/* One step on an HTTP/1.1 connection: returns the bytes used (0: more are needed). */
static size_t h1_step(struct conn *c, const unsigned char *p, size_t len, uint64_t base) {
    if (c->body_left) {
        size_t take = len < c->body_left ? len : (size_t)c->body_left;
        c->body_left -= take;
        if (!c->body_left) {
            serve(c, base + take, H1_OK, sizeof H1_OK - 1);
            if (c->close_after)
                c->closing = 1;
        }
        return take;
    }
    size_t from = c->scan > 3 ? c->scan - 3 : 0;
    const unsigned char *end = memmem(p + from, len - from, "\r\n\r\n", 4);
    if (!end) {
        c->scan = len;
        if (len > HEAD_MAX)
            h1_error(c, "431 Request Header Fields Too Large");
        return 0;
    }
    c->scan = 0;
    size_t head = (size_t)(end - p) + 4;
    /* The request line: METHOD SP TARGET SP HTTP/1.x */
    const unsigned char *eol = memmem(p, head, "\r\n", 2);
    const unsigned char *sp1 = memchr(p, ' ', (size_t)(eol - p));
    const unsigned char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (!sp1 || !sp2 || eol - sp2 - 1 != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0) {
        h1_error(c, "400 Bad Request");
        return head;
    }
    int head_only = sp1 - p == 4 && memcmp(p, "HEAD", 4) == 0;
    int get = sp1 - p == 3 && memcmp(p, "GET", 3) == 0;
    c->close_after = sp2[8] == '0';
    uint64_t body = 0;
    int upgrade_ws = 0, chunked = 0, expect = 0;
    const unsigned char *key = NULL;
    size_t key_len = 0;
    for (const unsigned char *l = eol + 2; l < p + head - 2;) {
        const unsigned char *le = memmem(l, (size_t)(p + head - l), "\r\n", 2);
        const unsigned char *colon = memchr(l, ':', (size_t)(le - l));
        if (!colon) {
            h1_error(c, "400 Bad Request");
            return head;
        }
        const unsigned char *v = colon + 1, *ve = le;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        size_t name = (size_t)(colon - l), vn = (size_t)(ve - v);
        if (ieq(l, name, "content-length")) {
            if (!vn || vn > 18) {
                h1_error(c, "400 Bad Request");
                return head;
            }
            body = 0;
            for (size_t i = 0; i < vn; i++) {
                if (v[i] < '0' || v[i] > '9') {
                    h1_error(c, "400 Bad Request");
                    return head;
                }
                body = body * 10 + (uint64_t)(v[i] - '0');
            }
        } else if (ieq(l, name, "transfer-encoding")) {
            chunked = 1;
        } else if (ieq(l, name, "upgrade")) {
            upgrade_ws = icontains(v, vn, "websocket");
        } else if (ieq(l, name, "expect")) {
            expect = icontains(v, vn, "100-continue");
        } else if (ieq(l, name, "sec-websocket-key")) {
            key = v;
            key_len = vn;
        } else if (ieq(l, name, "connection")) {
            if (icontains(v, vn, "close"))
                c->close_after = 1;
            else if (icontains(v, vn, "keep-alive"))
                c->close_after = 0;
        }
        l = le + 2;
    }
    if (chunked) {
        h1_error(c, "501 Not Implemented");
        return head;
    }
    if (upgrade_ws && get) {
        if (!key || key_len > 64) {
            h1_error(c, "400 Bad Request");
            return head;
        }
        char accept_key[29];
        ws_accept_key(key, key_len, accept_key);
        char resp[160];
        int n = snprintf(resp, sizeof resp,
                         "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
                         accept_key);
        write_bytes(c, resp, (size_t)n);
        c->proto = P_WS;
        return head;
    }
    if (body) {
        if (expect) {
            static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
            write_bytes(c, cont, sizeof cont - 1);
        }
        c->body_left = body;
        return head;
    }
    serve(c, base + head, H1_OK, head_only ? sizeof H1_OK - 3 : sizeof H1_OK - 1);
    if (c->close_after)
        c->closing = 1;
    return head;
}

/* ---- HTTP/2 ---------------------------------------------------------------------------- */

static void put_frame_head(unsigned char *f, uint32_t len, int type, int flags, uint32_t sid) {
    f[0] = (unsigned char)(len >> 16);
    f[1] = (unsigned char)(len >> 8);
    f[2] = (unsigned char)len;
    f[3] = (unsigned char)type;
    f[4] = (unsigned char)flags;
    f[5] = (unsigned char)(sid >> 24 & 0x7f);
    f[6] = (unsigned char)(sid >> 16);
    f[7] = (unsigned char)(sid >> 8);
    f[8] = (unsigned char)sid;
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

enum { H2_PROTOCOL = 1, H2_FLOW = 3, H2_FRAME_SIZE = 6, H2_CALM = 11 };

static size_t h2_goaway(struct conn *c, uint32_t code) {
    unsigned char f[17];
    put_frame_head(f, 8, 7, 0, 0);
    put32(f + 9, c->last_stream);
    put32(f + 13, code);
    write_bytes(c, f, sizeof f);
    c->closing = 1;
    return 0;
}

/* The connection's opening: our SETTINGS (100 streams at most, the largest stream window)
 * and the connection's receive window raised to the largest, in one send(). */
static void h2_open(struct conn *c) {
    unsigned char f[9 + 12 + 13];
    put_frame_head(f, 12, 4, 0, 0);
    f[9] = 0, f[10] = 3, put32(f + 11, 100);             /* MAX_CONCURRENT_STREAMS */
    f[15] = 0, f[16] = 4, put32(f + 17, (uint32_t)H2_WIN_MAX); /* INITIAL_WINDOW_SIZE */
    put_frame_head(f + 21, 4, 8, 0, 0);
    put32(f + 30, (uint32_t)(H2_WIN_MAX - 65535));
    write_bytes(c, f, sizeof f);
    c->send_win = 65535;
    c->recv_win = H2_WIN_MAX;
}

static void h2_response(unsigned char r[21], uint32_t sid) {
    put_frame_head(r, 1, 1, 0x4, sid); /* HEADERS, END_HEADERS */
    r[9] = 0x88;                       /* :status: 200 */
    put_frame_head(r + 10, 2, 0, 0x1, sid); /* DATA, END_STREAM */
    r[19] = 'o';
    r[20] = 'k';
}

static void h2_serve(struct conn *c, uint32_t sid, uint64_t end_off) {
    for (size_t i = 0; i < c->open_len; i++)
        if (c->open[i] == sid) {
            c->open[i] = c->open[--c->open_len];
            break;
        }
    unsigned char r[21];
    h2_response(r, sid);
    if (c->send_win >= 2 && !c->held_len) {
        c->send_win -= 2;
        serve(c, end_off, r, sizeof r);
        return;
    }
    /* The connection's window is spent: wait, then hold the response for a WINDOW_UPDATE. */
    uint64_t delay = next_delay_ns();
    spin_ns(delay);
    if (c->held_len == c->held_cap) {
        c->held_cap = c->held_cap ? 2 * c->held_cap : 16;
        c->held = xrealloc(c->held, c->held_cap * sizeof *c->held);
    }
    c->held[c->held_len++] = (struct h2_held){sid, end_off, c->arrival_ns, c->read_ns, delay};
}

static void h2_release(struct conn *c) {
    if (!c->held_len)
        return;
    size_t i = 0;
    for (; i < c->held_len && c->send_win >= 2 && !c->closing; i++) {
        struct h2_held *h = &c->held[i];
        unsigned char r[21];
        h2_response(r, h->stream);
        c->send_win -= 2;
        uint64_t t = write_bytes(c, r, sizeof r);
        if (t)
            log_request(c, h->end_off, h->arrival_ns, h->read_ns, t, h->delay_ns);
    }
    memmove(c->held, c->held + i, (c->held_len - i) * sizeof *c->held);
    c->held_len -= i;
}

static int h2_is_open(const struct conn *c, uint32_t sid) {
    for (size_t i = 0; i < c->open_len; i++)
        if (c->open[i] == sid)
            return 1;
    return 0;
}

/* One frame on an HTTP/2 connection: returns the bytes used (0: more are needed, or a
 * protocol error ended the connection). */
static size_t h2_step(struct conn *c, const unsigned char *p, size_t len, uint64_t base) {
    if (len < 9)
        return 0;
    uint32_t flen = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
    int type = p[3], flags = p[4];
    uint32_t sid = be32(p + 5) & 0x7fffffff;
    if (flen > H2_FRAME_MAX)
        return h2_goaway(c, H2_FRAME_SIZE);
    if (len < 9 + (size_t)flen)
        return 0;
    const unsigned char *pl = p + 9;
    uint64_t end = base + 9 + flen;
    size_t used = 9 + flen;
    if (c->cont_stream && (type != 9 || sid != c->cont_stream))
        return h2_goaway(c, H2_PROTOCOL);
    switch (type) {
    case 0: { /* DATA */
        if (!sid || !h2_is_open(c, sid))
            return h2_goaway(c, H2_PROTOCOL);
        if ((flags & 0x8) && (!flen || pl[0] >= flen))
            return h2_goaway(c, H2_PROTOCOL);
        c->recv_win -= flen;
        if (c->recv_win < H2_WIN_MAX / 2) {
            unsigned char f[13];
            put_frame_head(f, 4, 8, 0, 0);
            put32(f + 9, (uint32_t)(H2_WIN_MAX - c->recv_win));
            write_bytes(c, f, sizeof f);
            c->recv_win = H2_WIN_MAX;
        }
        if (flags & 0x1)
            h2_serve(c, sid, end);
        break;
    }
    case 1: { /* HEADERS */
        size_t need = (flags & 0x8 ? 1 : 0) + (flags & 0x20 ? 5 : 0);
        if (!sid || !(sid & 1) || flen < need || ((flags & 0x8) && pl[0] > flen - need))
            return h2_goaway(c, H2_PROTOCOL);
        if (sid > c->last_stream) {
            c->last_stream = sid;
            if (!(flags & 0x1)) { /* a body follows */
                if (c->open_len >= H2_OPEN_MAX)
                    return h2_goaway(c, H2_CALM);
                if (c->open_len == c->open_cap) {
                    c->open_cap = c->open_cap ? 2 * c->open_cap : 16;
                    c->open = xrealloc(c->open, c->open_cap * sizeof *c->open);
                }
                c->open[c->open_len++] = sid;
            }
        } else if (!h2_is_open(c, sid) || !(flags & 0x1)) {
            return h2_goaway(c, H2_PROTOCOL); /* trailers end their stream */
        }
        if (!(flags & 0x4)) {
            c->cont_stream = sid;
            c->cont_end_stream = flags & 0x1;
        } else if (flags & 0x1) {
            h2_serve(c, sid, end);
        }
        break;
    }
    case 9: /* CONTINUATION */
        if (!c->cont_stream)
            return h2_goaway(c, H2_PROTOCOL);
        if (flags & 0x4) {
            c->cont_stream = 0;
            if (c->cont_end_stream)
                h2_serve(c, sid, end);
        }
        break;
    case 2: /* PRIORITY */
        if (!sid || flen != 5)
            return h2_goaway(c, H2_PROTOCOL);
        break;
    case 3: /* RST_STREAM */
        if (!sid || flen != 4)
            return h2_goaway(c, H2_PROTOCOL);
        for (size_t i = 0; i < c->open_len; i++)
            if (c->open[i] == sid) {
                c->open[i] = c->open[--c->open_len];
                break;
            }
        break;
    case 4: /* SETTINGS */
        if (sid)
            return h2_goaway(c, H2_PROTOCOL);
        if (flags & 0x1) {
            if (flen)
                return h2_goaway(c, H2_FRAME_SIZE);
            break;
        }
        if (flen % 6)
            return h2_goaway(c, H2_FRAME_SIZE);
        for (uint32_t i = 0; i < flen; i += 6) {
            int id = pl[i] << 8 | pl[i + 1];
            uint32_t v = be32(pl + i + 2);
            if ((id == 2 && v > 1) || (id == 5 && (v < 16384 || v > 16777215)))
                return h2_goaway(c, H2_PROTOCOL);
            if (id == 4 && v > (uint32_t)H2_WIN_MAX)
                return h2_goaway(c, H2_FLOW);
        }
        {
            unsigned char ack[9];
            put_frame_head(ack, 0, 4, 0x1, 0);
            write_bytes(c, ack, sizeof ack);
        }
        break;
    case 5: /* PUSH_PROMISE: a client may not send it */
        return h2_goaway(c, H2_PROTOCOL);
    case 6: /* PING */
        if (sid)
            return h2_goaway(c, H2_PROTOCOL);
        if (flen != 8)
            return h2_goaway(c, H2_FRAME_SIZE);
        if (!(flags & 0x1)) {
            unsigned char f[17];
            put_frame_head(f, 8, 6, 0x1, 0);
            memcpy(f + 9, pl, 8);
            write_bytes(c, f, sizeof f);
        }
        break;
    case 7: /* GOAWAY: the client closes */
        if (sid)
            return h2_goaway(c, H2_PROTOCOL);
        break;
    case 8: { /* WINDOW_UPDATE */
        if (flen != 4)
            return h2_goaway(c, H2_FRAME_SIZE);
        uint32_t inc = be32(pl) & 0x7fffffff;
        if (!inc && !sid)
            return h2_goaway(c, H2_PROTOCOL);
        if (!sid) {
            c->send_win += inc;
            if (c->send_win > H2_WIN_MAX)
                return h2_goaway(c, H2_FLOW);
            h2_release(c);
        }
        break;
    }
    default: /* unknown types are ignored */
        break;
    }
    return used;
}

/* ---- WebSocket ------------------------------------------------------------------------- */

static void ws_close(struct conn *c, const unsigned char *payload, size_t n) {
    unsigned char f[4] = {0x88, 0, 0, 0};
    size_t fl = 2;
    if (n >= 2) { /* echo the status code */
        f[1] = 2;
        f[2] = payload[0];
        f[3] = payload[1];
        fl = 4;
    }
    write_bytes(c, f, fl);
    c->closing = 1;
}

static size_t ws_fail(struct conn *c, int code) {
    unsigned char st[2] = {(unsigned char)(code >> 8), (unsigned char)code};
    ws_close(c, st, 2);
    return 0;
}

/* One frame on a WebSocket connection: returns the bytes used (0: more are needed, or the
 * connection is closing). */
static size_t ws_step(struct conn *c, const unsigned char *p, size_t len, uint64_t base) {
    if (len < 2)
        return 0;
    int fin = p[0] & 0x80, op = p[0] & 0x0f;
    if (p[0] & 0x70)
        return ws_fail(c, 1002);
    if (!(p[1] & 0x80))
        return ws_fail(c, 1002); /* a client's frames are masked */
    uint64_t plen = p[1] & 0x7f;
    size_t h = 2;
    if (plen == 126) {
        if (len < 4)
            return 0;
        plen = (uint64_t)p[2] << 8 | p[3];
        h = 4;
    } else if (plen == 127) {
        if (len < 10)
            return 0;
        plen = 0;
        for (int i = 0; i < 8; i++)
            plen = plen << 8 | p[2 + i];
        h = 10;
    }
    if (plen > WS_MAX)
        return ws_fail(c, 1009);
    if (len < h + 4 + plen)
        return 0;
    const unsigned char *mask = p + h, *pl = p + h + 4;
    size_t used = h + 4 + (size_t)plen;
    if (op >= 8) { /* control */
        if (!fin || plen > 125)
            return ws_fail(c, 1002);
        unsigned char buf[4 + 125];
        for (size_t i = 0; i < plen; i++)
            buf[2 + i] = pl[i] ^ mask[i & 3];
        if (op == 0x8) {
            ws_close(c, buf + 2, (size_t)plen);
            return used;
        }
        if (op == 0x9) { /* ping: pong */
            buf[0] = 0x8a;
            buf[1] = (unsigned char)plen;
            write_bytes(c, buf, 2 + (size_t)plen);
        } else if (op != 0xa) {
            return ws_fail(c, 1002);
        }
        return used;
    }
    if (op == 0) {
        if (!c->msg_op)
            return ws_fail(c, 1002);
    } else if (op == 1 || op == 2) {
        if (c->msg_op)
            return ws_fail(c, 1002);
        c->msg_op = op;
        c->msg_len = 0;
    } else {
        return ws_fail(c, 1002);
    }
    if (c->msg_len + plen > WS_MAX)
        return ws_fail(c, 1009);
    /* The reply's header first, then the payload unmasked behind it. */
    if (!c->msg_len) {
        unsigned char z[10] = {0};
        append(&c->msg, &c->msg_len, &c->msg_cap, z, sizeof z);
    }
    size_t at = c->msg_len;
    append(&c->msg, &c->msg_len, &c->msg_cap, pl, (size_t)plen);
    for (size_t i = 0; i < plen; i++)
        c->msg[at + i] ^= mask[i & 3];
    if (!fin)
        return used;
    uint64_t n = c->msg_len - 10;
    size_t hl = n < 126 ? 2 : n < 65536 ? 4 : 10;
    unsigned char *r = c->msg + 10 - hl;
    r[0] = (unsigned char)(0x80 | c->msg_op);
    if (hl == 2) {
        r[1] = (unsigned char)n;
    } else if (hl == 4) {
        r[1] = 126;
        r[2] = (unsigned char)(n >> 8);
        r[3] = (unsigned char)n;
    } else {
        r[1] = 127;
        for (int i = 0; i < 8; i++)
            r[2 + i] = (unsigned char)(n >> (56 - 8 * i));
    }
    c->msg_op = 0;
    serve(c, base + used, r, hl + (size_t)n);
    c->msg_len = 0;
    return used;
}

/* SHA-1 (FIPS 180-4) of a short message, for the accept key. */
static void sha1(const unsigned char *m, size_t n, unsigned char out[20]) {
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    size_t total = (n + 9 + 63) / 64 * 64;
    unsigned char *b = calloc(total, 1);
    if (!b)
        exit(1);
    memcpy(b, m, n);
    b[n] = 0x80;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        b[total - 1 - i] = (unsigned char)(bits >> (8 * i));
    for (size_t blk = 0; blk < total; blk += 64) {
        uint32_t w[80];
        for (int t = 0; t < 16; t++)
            w[t] = be32(b + blk + 4 * t);
        for (int t = 16; t < 80; t++) {
            uint32_t x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16];
            w[t] = x << 1 | x >> 31;
        }
        uint32_t a = h[0], bb = h[1], cc = h[2], d = h[3], e = h[4];
        for (int t = 0; t < 80; t++) {
            uint32_t f, k;
            if (t < 20)
                f = (bb & cc) | (~bb & d), k = 0x5A827999;
            else if (t < 40)
                f = bb ^ cc ^ d, k = 0x6ED9EBA1;
            else if (t < 60)
                f = (bb & cc) | (bb & d) | (cc & d), k = 0x8F1BBCDC;
            else
                f = bb ^ cc ^ d, k = 0xCA62C1D6;
            uint32_t tmp = (a << 5 | a >> 27) + f + e + k + w[t];
            e = d, d = cc, cc = bb << 30 | bb >> 2, bb = a, a = tmp;
        }
        h[0] += a, h[1] += bb, h[2] += cc, h[3] += d, h[4] += e;
    }
    free(b);
    for (int i = 0; i < 5; i++)
        put32(out + 4 * i, h[i]);
}

/* base64(SHA-1(key + the RFC's GUID)): 28 characters. */
static void ws_accept_key(const unsigned char *key, size_t n, char out[29]) {
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char m[64 + sizeof guid], d[21] = {0};
    memcpy(m, key, n);
    memcpy(m + n, guid, sizeof guid - 1);
    sha1(m, n + sizeof guid - 1, d);
    for (int i = 0, o = 0; i < 21; i += 3, o += 4) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        out[o] = b64[v >> 18 & 63];
        out[o + 1] = b64[v >> 12 & 63];
        out[o + 2] = b64[v >> 6 & 63];
        out[o + 3] = b64[v & 63];
    }
    out[27] = '='; /* 20 bytes: the last group holds two */
    out[28] = 0;
}

/* ---- connections ----------------------------------------------------------------------- */

static void conn_free(struct conn *c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c->open);
    free(c->held);
    free(c->msg);
    free(c);
}

/* Uses the bytes `p[0..len)`, which end at the connection's rx_total; returns how many it
 * used (what is left is a partial request or frame). */
static size_t process(struct conn *c, const unsigned char *p, size_t len) {
    uint64_t base = c->rx_total - len;
    size_t pos = 0;
    while (pos < len && !c->closing) {
        size_t n = 0;
        const unsigned char *q = p + pos;
        size_t avail = len - pos;
        switch (c->proto) {
        case P_NEW: {
            size_t m = avail < 24 ? avail : 24;
            if (memcmp(q, PREFACE, m) != 0) {
                c->proto = P_H1;
                continue;
            }
            if (m < 24)
                return pos;
            c->proto = P_H2;
            h2_open(c);
            n = 24;
            break;
        }
        case P_H1:
            n = h1_step(c, q, avail, base + pos);
            break;
        case P_H2:
            n = h2_step(c, q, avail, base + pos);
            break;
        case P_WS:
            n = ws_step(c, q, avail, base + pos);
            break;
        }
        if (!n)
            break;
        pos += n;
    }
    return c->closing ? len : pos;
}

static void set_events(struct conn *c) {
    uint32_t want = 0;
    if (c->out_len < OUT_PAUSE || c->shut)
        want |= EPOLLIN;
    if (c->out_len && !c->shut)
        want |= EPOLLOUT;
    if (want != c->events) {
        struct epoll_event ev = {.events = want, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->events = want;
    }
}

/* After the output drained, a closing connection shuts its writing down and waits for the
 * peer's end, so that its last bytes are not lost to a reset. */
static void settle(struct conn *c) {
    if (c->closing && !c->shut && !c->out_len) {
        shutdown(c->fd, SHUT_WR);
        c->shut = 1;
    }
    set_events(c);
}

static unsigned char rbuf[READ_BYTES];

static void on_readable(struct conn *c) {
    struct iovec iov = {rbuf, sizeof rbuf};
    union {
        char buf[CMSG_SPACE(sizeof(struct timespec)) * 2];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof ctl.buf};
    ssize_t r = recvmsg(c->fd, &mh, MSG_DONTWAIT);
    uint64_t read_ns = mono_ns();
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (r <= 0) { /* the peer's end (or a reset): what is queued goes if it can */
        if (!c->shut)
            flush_out(c);
        conn_free(c);
        return;
    }
    c->rx_total += (uint64_t)r;
    if (c->shut) /* closing: what comes now is not served */
        return;
    c->read_ns = read_ns;
    c->arrival_ns = 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec t;
            memcpy(&t, CMSG_DATA(cm), sizeof t);
            c->arrival_ns = (uint64_t)((int64_t)ts_ns(&t) - real_minus_mono);
        }
    }
    if (c->in_len) {
        append(&c->in, &c->in_len, &c->in_cap, rbuf, (size_t)r);
        size_t used = process(c, c->in, c->in_len);
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
    } else {
        size_t used = process(c, rbuf, (size_t)r);
        if (used < (size_t)r)
            append(&c->in, &c->in_len, &c->in_cap, rbuf + used, (size_t)r - used);
    }
    if (!c->in_len && c->in_cap > READ_BYTES) {
        free(c->in);
        c->in = NULL;
        c->in_cap = 0;
    }
    settle(c);
}

static void on_accept(int lfd) {
    for (;;) {
        struct sockaddr_in a;
        socklen_t al = sizeof a;
        int fd = accept4(lfd, (struct sockaddr *)&a, &al, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                fprintf(stderr, "truth_server: accept: %s\n", strerror(errno));
            return;
        }
        int one = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) ||
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one)) {
            fprintf(stderr, "truth_server: setsockopt: %s\n", strerror(errno));
            close(fd);
            continue;
        }
        struct conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->port = ntohs(a.sin_port);
        c->events = EPOLLIN;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
            fprintf(stderr, "truth_server: epoll_ctl: %s\n", strerror(errno));
            free(c);
            close(fd);
        }
    }
}

static void on_signal(int s) {
    (void)s;
    stop = 1;
}

static int parse_i64(const char *s, int64_t *out) {
    char *e;
    errno = 0;
    long long v = strtoll(s, &e, 10);
    if (errno || e == s || *e || v < 0 || v > 100000000)
        return -1;
    *out = v;
    return 0;
}

static void usage(const char *why) {
    fprintf(stderr,
            "truth_server: %s (usage: truth_server [--delay-us N | --delay-us-every "
            "SLOW_US:EVERY:FAST_US] [--log FILE]; microseconds 0..100000000, EVERY >= 1)\n",
            why);
    exit(2);
}

int main(int argc, char **argv) {
    const char *log_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--delay-us") && i + 1 < argc) {
            if (parse_i64(argv[++i], &delay_fixed_us))
                usage("--delay-us takes a whole number of microseconds");
        } else if (!strcmp(argv[i], "--delay-us-every") && i + 1 < argc) {
            char s[64], *a, *b;
            snprintf(s, sizeof s, "%s", argv[++i]);
            a = strchr(s, ':');
            b = a ? strchr(a + 1, ':') : NULL;
            if (!a || !b)
                usage("--delay-us-every takes SLOW_US:EVERY:FAST_US, e.g. 3000:100:20");
            *a++ = 0, *b++ = 0;
            if (parse_i64(s, &slow_us) || parse_i64(a, &every) || parse_i64(b, &fast_us) ||
                every < 1)
                usage("--delay-us-every takes SLOW_US:EVERY:FAST_US, e.g. 3000:100:20");
        } else if (!strcmp(argv[i], "--log") && i + 1 < argc) {
            log_path = argv[++i];
        } else {
            char why[256];
            snprintf(why, sizeof why, "unknown or incomplete argument: %.200s", argv[i]);
            usage(why);
        }
    }
    if (delay_fixed_us >= 0 && slow_us >= 0)
        usage("--delay-us and --delay-us-every exclude each other");
    if (log_path) {
        log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (log_fd < 0) {
            fprintf(stderr, "truth_server: cannot open the log %s: %s\n", log_path,
                    strerror(errno));
            return 2;
        }
        log_buf = malloc(LOG_BYTES);
        if (!log_buf)
            return 1;
    }
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: epoll_wait returns EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    /* SO_TIMESTAMPNS on the listener too: the kernel stamps packets from then on, so even a
     * request that arrives before accept() has its stamp. */
    if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        setsockopt(l, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) ||
        bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4096) ||
        getsockname(l, (struct sockaddr *)&a, &al)) {
        fprintf(stderr, "truth_server: cannot listen on 127.0.0.1: %s\n", strerror(errno));
        return 1;
    }
    ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &lev)) {
        fprintf(stderr, "truth_server: epoll: %s\n", strerror(errno));
        return 1;
    }
    read_offset(64);
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);

    struct epoll_event evs[256];
    while (!stop) {
        /* A timeout, so that a signal that comes while a request is served is not missed. */
        int n = epoll_wait(ep, evs, 256, 200);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "truth_server: epoll_wait: %s\n", strerror(errno));
            return 1;
        }
        if (mono_ns() - offset_read_at > 1000000000ULL)
            read_offset(8);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (!c) {
                on_accept(l);
                continue;
            }
            if (evs[i].events & EPOLLOUT) {
                if (flush_out(c) < 0) {
                    conn_free(c);
                    continue;
                }
                settle(c);
            }
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                on_readable(c);
        }
    }
    if (log_fd >= 0) {
        log_flush();
        close(log_fd);
    }
    return 0;
}
