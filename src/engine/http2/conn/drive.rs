//! The task that moves a connection's bytes: it writes what the streams queued (one write
//! for all of them), reads what the server sends and hands it to the connection's state.
//! With `--h2-coalesce` new streams' frames wait for the streams in flight ([`Core::hold`]):
//! the answers wake the driver, and its timer ends a hold that no answer ends.

use super::{add, register, ConnFailure, Core};
use crate::engine::connect::Stream;
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
}

/// Moves the bytes of `conn` over `io` until the connection ends.
pub(in crate::engine::http2) async fn drive(conn: Rc<Conn>, mut io: Stream) {
    let mut turns = Turns::default();
    std::future::poll_fn(|cx| poll_drive(&conn, &mut io, &mut turns, cx)).await;
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

fn poll_drive(conn: &Conn, io: &mut Stream, turns: &mut Turns, cx: &mut Context<'_>) -> Poll<()> {
    let mut core = conn.core.borrow_mut();
    register(&mut core.driver, cx);
    let Turns { flush, timer } = turns;
    let mut reads = 0;
    loop {
        if core.done() && !*flush {
            return Poll::Ready(());
        }
        let mut progress = false;
        if core.out_done < core.out.len() && !holding(&core, timer, cx) {
            let from = core.out_done;
            match Pin::new(&mut *io).poll_write(cx, &core.out[from..]) {
                Poll::Ready(Ok(0)) => {
                    return end(&mut core, closed("the server closed the connection".into()))
                }
                Poll::Ready(Ok(n)) => {
                    add(&core.wire.written, n);
                    core.out_done += n;
                    if core.out_done == core.out.len() {
                        core.written_out(Instant::now());
                    }
                    *flush = true;
                    progress = true;
                }
                Poll::Ready(Err(e)) => return end(&mut core, io_failure(&e)),
                Poll::Pending => {}
            }
        }
        if *flush {
            match Pin::new(&mut *io).poll_flush(cx) {
                Poll::Ready(Ok(())) => *flush = false,
                Poll::Ready(Err(e)) => return end(&mut core, io_failure(&e)),
                Poll::Pending => {}
            }
        }
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
                add(&core.wire.read, n);
                if let Err(f) = core.receive(Instant::now()) {
                    core.fail_all(f);
                }
            }
            Poll::Ready(Err(e)) => return end(&mut core, io_failure(&e)),
            Poll::Pending if progress => {}
            Poll::Pending => return Poll::Pending,
        }
    }
}

/// Ends the connection with `failure`, its streams told.
fn end(core: &mut Core, failure: ConnFailure) -> Poll<()> {
    if core.failure.is_none() {
        core.fail_all(failure);
    }
    Poll::Ready(())
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
