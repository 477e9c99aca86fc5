//! A connection's byte stream as frames, with bounded memory (the `Connection` of
//! tokio's mini-redis): bytes are read into a buffer that grows only as they
//! arrive, and a frame is parsed once it is complete. The length a peer
//! announces decides nothing about memory; it only says when a frame is whole.
//!
//! Memory: every connection has a read buffer of [`BASE_BUFFER`] bytes. Growing
//! it (a frame larger than that) takes bytes from the server's [`FrameBudget`],
//! shared by every connection, before the allocation; they go back when the
//! buffer shrinks after the frame. So received frame bytes never exceed
//! connections x `BASE_BUFFER` + the budget, whatever peers announce or send.

use crate::wire;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// Read buffer every connection has, free of the budget: handshake frames,
/// KNOT hashes and small requests fit in it.
pub(crate) const BASE_BUFFER: usize = 8 << 10;

/// Bytes of frames in flight beyond each connection's base buffer, shared by
/// all connections (a semaphore of bytes).
pub(crate) struct FrameBudget {
    bytes: Semaphore,
    total: usize,
}

impl FrameBudget {
    pub fn new(total: usize) -> Arc<FrameBudget> {
        // A semaphore takes at most u32::MAX permits at once and MAX_PERMITS in all.
        let total = total.min(Semaphore::MAX_PERMITS);
        Arc::new(FrameBudget {
            bytes: Semaphore::new(total),
            total,
        })
    }

    /// Bytes taken by connections now.
    pub fn in_use(&self) -> usize {
        self.total - self.bytes.available_permits()
    }

    pub fn total(&self) -> usize {
        self.total
    }
}

/// Why a connection ended badly (logged).
pub(crate) type Why = String;

/// How reading a frame failed.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The peer broke the protocol (a frame too large, empty, cut short) or
    /// stalled: tell it why, then hang up.
    Bad(Why),
    /// No memory for the frame within its deadline: the server is busy.
    Busy(Why),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Bad(w) | ReadError::Busy(w) => f.write_str(w),
        }
    }
}

pub(crate) struct Connection {
    read: OwnedReadHalf,
    write: OwnedWriteHalf,
    /// Received bytes; `buf[start..]` are not consumed yet.
    buf: Vec<u8>,
    start: usize,
    budget: Arc<FrameBudget>,
    /// Budget bytes held: the buffer's capacity beyond [`BASE_BUFFER`].
    held: usize,
}

impl Connection {
    pub fn new(sock: TcpStream, budget: Arc<FrameBudget>) -> Connection {
        let (read, write) = sock.into_split();
        Connection {
            read,
            write,
            buf: Vec::with_capacity(BASE_BUFFER),
            start: 0,
            budget,
            held: 0,
        }
    }

    /// The bytes received and not consumed yet.
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Drops the first `n` buffered bytes; gives memory back once the buffer is
    /// (nearly) empty.
    pub fn consume(&mut self, n: usize) {
        self.start += n.min(self.buf.len() - self.start);
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        if self.held > 0 && self.buf.len() - self.start <= BASE_BUFFER {
            self.compact();
            self.buf.shrink_to(BASE_BUFFER);
            self.account();
        }
    }

    /// Whether a whole frame is buffered (a pipelined request waiting).
    pub fn frame_buffered(&self, max: u32) -> bool {
        matches!(self.complete_frame(max), Ok(Some(_)))
    }

    /// The body of the frame at the start of the buffer, if it is all there.
    fn complete_frame(&self, max: u32) -> Result<Option<Range<usize>>, wire::WireError> {
        let b = self.buffered();
        if b.len() < 4 {
            return Ok(None);
        }
        let len = wire::frame_len(b[..4].try_into().unwrap(), max)?;
        Ok((b.len() >= 4 + len).then(|| self.start + 4..self.start + 4 + len))
    }

    /// Reads until a whole frame (at most `max` bytes of body) is buffered and
    /// returns its body's place; `body` gives it, `consume(4 + len)` drops it.
    /// `Ok(None)`: the peer closed the connection between frames. The wait for a
    /// frame's first byte and the frame itself are each limited to `idle`.
    pub async fn read_frame(
        &mut self,
        max: u32,
        idle: Duration,
    ) -> Result<Option<Range<usize>>, ReadError> {
        let mut deadline = Instant::now() + idle;
        let mut begun = !self.buffered().is_empty();
        loop {
            match self.complete_frame(max) {
                Ok(Some(body)) => return Ok(Some(body)),
                Ok(None) => {}
                Err(e) => return Err(ReadError::Bad(e.to_string())),
            }
            let have = self.buffered().len();
            let needed = if have < 4 {
                4
            } else {
                // Checked by `complete_frame` above.
                4 + u32::from_le_bytes(self.buffered()[..4].try_into().unwrap()) as usize
            };
            self.make_room(needed, deadline).await?;
            let n = match tokio::time::timeout_at(deadline, self.read.read_buf(&mut self.buf)).await
            {
                Err(_) if !begun => {
                    return Err(ReadError::Bad(format!("idle for {} s", idle.as_secs())))
                }
                Err(_) => {
                    return Err(ReadError::Bad(format!(
                        "a frame not complete within {} s",
                        idle.as_secs()
                    )))
                }
                Ok(Err(e)) => return Err(ReadError::Bad(e.to_string())),
                Ok(Ok(n)) => n,
            };
            if n == 0 {
                return if self.buffered().is_empty() {
                    Ok(None)
                } else {
                    Err(ReadError::Bad("frame cut short".into()))
                };
            }
            if !begun {
                begun = true;
                deadline = Instant::now() + idle;
            }
        }
    }

    /// Reads until at least `n` (at most [`BASE_BUFFER`]) bytes are buffered;
    /// `Ok(false)` if the peer closed first.
    pub async fn fill(&mut self, n: usize) -> std::io::Result<bool> {
        let n = n.min(BASE_BUFFER);
        while self.buffered().len() < n {
            if self.buf.len() == self.buf.capacity() {
                self.compact();
            }
            if self.read.read_buf(&mut self.buf).await? == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Reads whatever arrives next into the base buffer (the caller consumes
    /// what it can use first); `Ok(0)` at the end.
    pub async fn read_some(&mut self) -> std::io::Result<usize> {
        if self.buf.len() == self.buf.capacity() {
            self.compact();
        }
        self.read.read_buf(&mut self.buf).await
    }

    /// The body of a frame `read_frame` returned.
    pub fn body(&self, at: &Range<usize>) -> &[u8] {
        &self.buf[at.clone()]
    }

    /// Drops the frame `read_frame` returned (and the bytes before it).
    pub fn finish_frame(&mut self, at: Range<usize>) {
        self.consume(at.end.saturating_sub(self.start));
    }

    pub async fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.write.write_all(bytes).await
    }

    /// Makes room in the buffer for at least one more byte: once the bytes
    /// received fill it, it doubles (never past `frame_end` bytes, where the
    /// frame ends), with bytes taken from the budget, waited for until `deadline`.
    /// So a buffer is at most twice the bytes actually received.
    async fn make_room(&mut self, frame_end: usize, deadline: Instant) -> Result<(), ReadError> {
        if self.buf.len() < self.buf.capacity() {
            return Ok(());
        }
        self.compact();
        let len = self.buf.len();
        if len < self.buf.capacity() {
            return Ok(());
        }
        let target = (self.buf.capacity() * 2).min(frame_end).max(len + 1);
        let charge = target.saturating_sub(BASE_BUFFER + self.held);
        if charge > 0 {
            let permits = u32::try_from(charge).unwrap_or(u32::MAX);
            match tokio::time::timeout_at(deadline, self.budget.bytes.acquire_many(permits)).await
            {
                Ok(Ok(p)) => p.forget(),
                Ok(Err(_)) => return Err(ReadError::Busy("the server is stopping".into())),
                Err(_) => {
                    return Err(ReadError::Busy(format!(
                        "no memory for a frame of {frame_end} bytes: the {} MiB for frames in flight are taken",
                        self.budget.total >> 20
                    )))
                }
            }
            self.held += permits as usize;
        }
        self.buf.reserve_exact(target - len);
        self.account();
        Ok(())
    }

    /// Moves the unconsumed bytes to the front of the buffer.
    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }

    /// Makes the budget bytes held equal the buffer's capacity beyond the base
    /// (an allocator may round a capacity up: take those bytes too, or return
    /// what a shrink freed).
    fn account(&mut self) {
        let should = self.buf.capacity().saturating_sub(BASE_BUFFER);
        if should < self.held {
            self.budget.bytes.add_permits(self.held - should);
            self.held = should;
        } else if should > self.held {
            // Rounding: a few bytes, taken even beyond the budget.
            let extra = should - self.held;
            if let Ok(p) = self
                .budget
                .bytes
                .try_acquire_many(u32::try_from(extra).unwrap_or(u32::MAX))
            {
                p.forget();
                self.held = should;
            }
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if self.held > 0 {
            self.budget.bytes.add_permits(self.held);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    async fn pair(budget: Arc<FrameBudget>) -> (Connection, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (server, _) = l.accept().await.unwrap();
        (Connection::new(server, budget), client)
    }

    #[tokio::test]
    async fn an_announced_frame_costs_nothing_until_its_bytes_arrive() {
        let budget = FrameBudget::new(1 << 20);
        let (mut conn, mut client) = pair(budget.clone()).await;
        client
            .write_all(&(64u32 << 20).to_le_bytes())
            .await
            .unwrap();
        let r = conn.read_frame(64 << 20, Duration::from_millis(200)).await;
        assert!(matches!(r, Err(ReadError::Bad(_))), "{r:?}");
        assert!(conn.buf.capacity() <= BASE_BUFFER);
        assert_eq!(budget.in_use(), 0);
    }

    #[tokio::test]
    async fn large_frames_take_from_the_budget_and_give_back() {
        let budget = FrameBudget::new(1 << 20);
        let (mut conn, mut client) = pair(budget.clone()).await;
        let body: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
        let mut frame = (body.len() as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(&body);
        frame.extend_from_slice(&frame.clone());
        let writer = tokio::spawn(async move {
            client.write_all(&frame).await.unwrap();
            client
        });
        for _ in 0..2 {
            let at = conn
                .read_frame(1 << 20, Duration::from_secs(5))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(conn.body(&at), &body[..]);
            assert!(budget.in_use() >= body.len() - BASE_BUFFER);
            assert!(budget.in_use() <= 2 * body.len());
            conn.finish_frame(at);
        }
        assert_eq!(budget.in_use(), 0);
        assert!(conn.buf.capacity() <= BASE_BUFFER);
        drop(writer.await.unwrap());
    }

    #[tokio::test]
    async fn a_frame_beyond_the_budget_waits_and_is_refused_as_busy() {
        let budget = FrameBudget::new(100_000);
        let (mut conn, mut client) = pair(budget.clone()).await;
        let mut frame = 300_000u32.to_le_bytes().to_vec();
        frame.resize(4 + 300_000, 7);
        let writer = tokio::spawn(async move {
            let _ = client.write_all(&frame).await;
            client
        });
        let r = conn.read_frame(1 << 20, Duration::from_millis(300)).await;
        assert!(matches!(r, Err(ReadError::Busy(_))), "{r:?}");
        assert!(budget.in_use() <= budget.total());
        drop(conn);
        assert_eq!(budget.in_use(), 0);
        drop(writer.await.unwrap());
    }
}
