"""The agent's side of the channel to trainscope: fixed-layout binary records written to a FIFO.

Every record is one write() of at most PIPE_BUF (4096) bytes, so records from many processes
(the training process, forked DataLoader workers, torchrun ranks) never interleave. The FIFO is
opened O_NONBLOCK: when trainscope cannot keep up the record is dropped and counted, when
trainscope is gone the write fails and the channel closes itself. The training never waits on us.

Header (16 bytes, little-endian): magic u32 'TSA1', length u16 (whole record), type u8,
version u8, pid u32, seq u32 (per process; gaps = dropped records). docs/AGENT.md has the payloads.

Step records are batched (`send_step`): packed straight into a PIPE_BUF-sized buffer and written
together when the next would not fit (15 steps of 272 bytes) or the oldest is FLUSH_NS old, so a 1 ms step
loop makes one write() per 15 steps instead of every step. trainscope reads the FIFO in rounds
(src/run/agent_channel.cpp), so a write() seldom finds a reader to wake.
One write() of whole records up to PIPE_BUF is still atomic. Any other record flushes the batch
first (order is kept); so does the exit handler (finish.py). A process that dies without running
atexit (SIGKILL, os._exit) loses at most FLUSH_NS of step records.
"""
import os
import struct
import threading

MAGIC = 0x31415354  # b"TSA1" read little-endian
VERSION = 1
PIPE_BUF = 4096

T_TEXT = 1   # key=value lines; the first line is kind=...
T_STEP = 2
T_GPU = 3
T_FETCH = 4

HEADER = struct.Struct("<IHBBII")
# step, flags, t_end_ns, dur_ns, data_wait_ns, fetches, h2d_ns, h2d_count, h2d_bytes,
# h2d_pageable, h2d_blocking, fwd_ns, bwd_ns, opt_ns, io_ns, io_count, item_count, item_ns,
# mem_allocated, mem_reserved, mem_peak, rss, samples, getitem_ns, collate_ns, loss(f64),
# comm_ns, comm_count (explicit collectives), bwd_count (backward calls outside optimizer.step()),
# opt_count (optimizer.step() calls), heap (the C heap's in-use bytes, heap.py; -1 none),
# heap_free (the bytes it holds free; -1 none), cpu_ns (the process's CPU clock, read at this step's
# end with the RSS; -1 on steps between readings) -- appended later: older readers stop after loss
STEP = struct.Struct("<25qdqqqqqqq")
STEP_RECORD = struct.Struct("<IHBBII25qdqqqqqqq")  # header + step, packed in one call (send_step)
FLUSH_NS = 50_000_000  # a batch of step records waits at most this long (live status reads 1/s)
GPU = struct.Struct("<qq")          # step, gpu_ns
GPU_RECORD = struct.Struct("<IHBBIIqq")  # header + GPU, batched like steps (send_gpu)
FETCH = struct.Struct("<iiqqq")     # worker_id (-1 main), pad, samples, getitem_ns, collate_ns

# step flags
F_OPTIMIZER = 1     # ended by an optimizer step (none of 1/16/32: by a DataLoader fetch)
F_PROFILED = 2      # inside (or disturbed by) the profiler window
F_NONFINITE = 4     # the loss seen in this step was NaN/Inf
F_LOSS = 8          # the loss field holds a value
F_BACKWARD = 16     # ended by a backward() (no optimizer steps)
F_FORWARD = 32      # ended by the model's next top-level forward (no backward, no DataLoader)
F_WORKERS = 64      # a fetch in it waited for DataLoader workers to start (worker-restarts)


class Channel:
    def __init__(self, path):
        self.fd = -1
        self.pid = os.getpid()
        self.seq = 0
        self.dropped = 0
        self.dead = False
        self.buf = bytearray(PIPE_BUF)  # batched step records (send_step)
        self.used = 0                   # bytes of buf in use
        self.count = 0                  # records in buf
        self.t_first = 0                # perf_counter_ns of the oldest record in buf
        # One writer at a time: the loop thread batches steps while another thread (a DataLoader
        # settings record, the exit handler) may send; an uncontended lock costs ~0.1 us.
        self.lock = threading.Lock()
        # Each Python process opens the FIFO by path (exec'd children: torchrun ranks,
        # spawn-started workers); forked DataLoader workers share their parent's descriptor.
        try:
            self.fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            self.dead = True  # nobody reading: trainscope is gone
            return
        try:
            os.register_at_fork(after_in_child=self._after_fork)
        except AttributeError:
            pass

    def _after_fork(self):
        self.pid = os.getpid()
        self.seq = 0
        self.used = self.count = 0  # the parent's batch is the parent's to write
        self.lock = threading.Lock()  # another thread may have held it at fork()

    def send_step(self, t_ns, *fields):
        """Queues one step record (STEP's fields) stamped t_ns; writes the batch when the next
        record would not fit or the oldest is FLUSH_NS old."""
        self._queue(STEP_RECORD, T_STEP, t_ns, fields)

    def send_gpu(self, t_ns, step, gpu_ns):
        """Queues one GPU time (gpu_timer.py) in the step batch: on the GPU's path a record per
        step, and a write() per record would be two syscalls per step (the batch is flushed to
        keep order before an unbatched send), a cost the CPU's path never shows."""
        self._queue(GPU_RECORD, T_GPU, t_ns, (step, gpu_ns))

    def _queue(self, rec, rtype, t_ns, fields):
        if self.dead:
            return
        with self.lock:
            used = self.used
            if used + rec.size > PIPE_BUF:
                self._flush()
                used = 0
            if used == 0:
                self.t_first = t_ns
            self.seq += 1
            rec.pack_into(self.buf, used, MAGIC, rec.size, rtype, VERSION, self.pid, self.seq, *fields)
            self.used = used + rec.size
            self.count += 1
            if t_ns - self.t_first >= FLUSH_NS:
                self._flush()

    def flush(self):
        """Writes the batched step records (one atomic write: at most PIPE_BUF bytes)."""
        with self.lock:
            self._flush()

    def _flush(self):
        n = self.used
        if not n:
            return
        count = self.count
        self.used = self.count = 0
        if self.dead:
            return
        try:
            # A copy (one per batch): another thread may pack the next step while this one
            # is in write() without the GIL.
            os.write(self.fd, self.buf[:n])
        except BlockingIOError:
            self.dropped += count
        except OSError:  # EPIPE: trainscope died; the training goes on without us
            self.dead = True

    def send(self, rtype, payload):
        if self.dead:
            return
        n = HEADER.size + len(payload)
        if n > PIPE_BUF:
            payload = payload[:PIPE_BUF - HEADER.size]
            n = PIPE_BUF
        with self.lock:
            if self.used:
                self._flush()  # keep the order: batched steps first
            self.seq += 1
            try:
                os.write(self.fd, HEADER.pack(MAGIC, n, rtype, VERSION, self.pid, self.seq) + payload)
            except BlockingIOError:
                self.dropped += 1
            except OSError:  # EPIPE: trainscope died; the training goes on without us
                self.dead = True

    def send_text(self, kind, items):
        lines = ["kind=" + kind]
        for k, v in items:
            if v is None:
                continue
            if isinstance(v, bool):
                v = "1" if v else "0"
            v = str(v).replace("\n", " ")
            lines.append("%s=%s" % (k, v))
        self.send(T_TEXT, ("\n".join(lines)).encode("utf-8", "replace"))


class NullChannel:
    dead = True
    dropped = 0

    def send_step(self, t_ns, *fields):
        pass

    def flush(self):
        pass

    def send(self, rtype, payload):
        pass

    def send_text(self, kind, items):
        pass
