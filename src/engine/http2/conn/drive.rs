//! The task that moves a connection's bytes: it writes what the streams queued (one write
//! for all of them), reads what the server sends and hands it to the connection's state.
//! With `--h2-coalesce` new streams' frames wait for the streams in flight ([`Core::hold`]):
//! the answers wake the driver, and its timer ends a hold that no answer ends.

use super::{add, register, ConnFailure, Core};
use crate::engine::connect::Socket;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Reads the driver makes in one turn before it lets the streams run.
const READS_PER_TURN: usize = 16;

/// A connection: its state, shared by its streams and its driver.
pub(in crate::engine::http2) struct Conn {
    pub(in crate::engine::http2) core: RefCell<Core>,
}

/// What the driver keeps between its turns.
#[derive(Default)]
struct Turns {
    /// Written bytes not flushed yet.
    flush: bool,
    /// Ends a hold no answer ends (see [`holding`]).
    timer: Option<Pin<Box<Sleep>>>,
    /// The streams' new requests wait for one turn of the runtime's I/O driver before they
    /// are written (see [`Step::Gather`]): set while that turn is under way ...
    gathering: bool,
    /// ... and until the write that follows it.
    gathered: bool,
}

/// How a turn of the driver ended.
enum Step {
    /// The connection ended.
    Done,
    /// New requests are queued: before their write, the runtime polls its I/O driver once
    /// (a yield that lets it), so that the answers that came meanwhile are read and their
    /// streams' next requests join the same write. A loop's batching, not a timer's: the wait
    /// is one turn of the runtime, in the requests' `write` phase; a server that answers
    /// several at a time gets several requests a write, as nghttp2's session loop does.
    Gather,
}

/// Moves the bytes of `conn` over `io` until the connection ends.
pub(in crate::engine::http2) async fn drive(conn: Rc<Conn>, mut io: Socket) {
    let mut turns = Turns::default();
    loop {
        match std::future::poll_fn(|cx| poll_drive(&conn, &mut io, &mut turns, cx)).await {
            Step::Done => return,
            Step::Gather => tokio::task::yield_now().await,
        }
    }
}

/// Whether the frames in `out` wait ([`Core::hold`]). The answers that wake the driver end
/// most holds; should none come, the timer wakes it at the bound, to the timer wheel's
/// millisecond. The timer is set again only once it fired: never moved earlier, which would
/// wake the runtime's driver through its event descriptor.
fn holding(core: &Core, timer: &mut Option<Pin<Box<Sleep>>>, cx: &mut Context<'_>) -> bool {
    let mut now = None;
    if !core.hold(|| *now.insert(Instant::now())) {
        return false;
    }
    let max = core.coalesce.unwrap_or_default();
    let due = tokio::time::Instant::from_std(now.unwrap_or_else(Instant::now) + max);
    let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
    if timer.is_elapsed() {
        timer.as_mut().reset(due);
    }
    timer.as_mut().poll(cx).is_pending()
}

fn poll_drive(conn: &Conn, io: &mut Socket, turns: &mut Turns, cx: &mut Context<'_>) -> Poll<Step> {
    let mut core = conn.core.borrow_mut();
    register(&mut core.driver, cx);
    let Turns {
        flush,
        timer,
        gathering,
        gathered,
    } = turns;
    let mut reads = 0;
    // Back from the I/O driver's turn: read first; answers read wake their streams, whose
    // requests join the write when they wake the driver again.
    let mut read_first = std::mem::take(gathering);
    loop {
        if core.done() && !*flush {
            return Poll::Ready(Step::Done);
        }
        let writes = core.out_done < core.out.len() && !read_first;
        if writes && !*gathered && core.out_done == 0 && core.gathers() {
            *gathering = true;
            *gathered = true;
            return Poll::Ready(Step::Gather);
        }
        let write = writes && !holding(&core, timer, cx);
        let progress = match poll_out(&mut core, io, write, flush, gathered, cx) {
            Ok(progress) => progress,
            Err(failure) => return end(&mut core, failure),
        };
        if core.failure.is_some() {
            // A GOAWAY of the client's is on its way out; nothing more is read.
            if progress {
                continue;
            }
            return Poll::Pending;
        }
        if reads == READS_PER_TURN {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let filled = core.filled;
        let mut buf = ReadBuf::new(&mut core.buffer[filled..]);
        match Pin::new(&mut *io).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                if n == 0 {
                    return end(&mut core, closed("the server closed the connection".into()));
                }
                reads += 1;
                core.filled += n;
                add(&core.bytes.read, n);
                if !io.is_plain() {
                    // Under TLS the frames' offsets are not the TCP bytes': where they are.
                    core.tcp_read(io.tally());
                }
                if let Err(f) = core.receive(Instant::now()) {
                    core.fail_all(f);
                }
            }
            Poll::Ready(Err(e)) => return end(&mut core, io_failure(&e)),
            Poll::Pending if progress => {}
            Poll::Pending if read_first => {
                read_first = false;
                if reads > 0 {
                    // The streams just woken run first (they queue behind this wake-up).
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
            }
            Poll::Pending => return Poll::Pending,
        }
    }
}

/// Writes what the output holds (when `write`) and flushes what was written: whether any
/// was written.
#[inline]
fn poll_out(
    core: &mut Core,
    io: &mut Socket,
    write: bool,
    flush: &mut bool,
    gathered: &mut bool,
    cx: &mut Context<'_>,
) -> Result<bool, ConnFailure> {
    let mut progress = false;
    if write {
        let from = core.out_done;
        match Pin::new(&mut *io).poll_write(cx, &core.out[from..]) {
            Poll::Ready(Ok(0)) => return Err(closed("the server closed the connection".into())),
            Poll::Ready(Ok(n)) => {
                add(&core.bytes.written, n);
                core.out_done += n;
                if core.out_done == core.out.len() {
                    core.written_out(Instant::now());
                    *gathered = false;
                }
                *flush = true;
                progress = true;
            }
            Poll::Ready(Err(e)) => return Err(io_failure(&e)),
            Poll::Pending => {}
        }
    }
    if *flush {
        match Pin::new(&mut *io).poll_flush(cx) {
            Poll::Ready(Ok(())) => {
                *flush = false;
                if !io.is_plain() {
                    core.flushed(io.tally());
                }
            }
            Poll::Ready(Err(e)) => return Err(io_failure(&e)),
            Poll::Pending => {}
        }
    }
    Ok(progress)
}

/// Ends the connection with `failure`, its streams told.
fn end(core: &mut Core, failure: ConnFailure) -> Poll<Step> {
    if core.failure.is_none() {
        core.fail_all(failure);
    }
    Poll::Ready(Step::Done)
}

fn closed(what: String) -> ConnFailure {
    ConnFailure::Closed(what, None)
}

fn io_failure(e: &std::io::Error) -> ConnFailure {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::BrokenPipe | K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted => {
            closed(format!("the connection ended: {e}"))
        }
        _ => ConnFailure::Io(e.to_string()),
    }
}
