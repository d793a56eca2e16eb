package spool

import (
	"bytes"
	"errors"
	"io"
	"os"
)

// ErrSpillOff refuses bytes past the memory bound of a Buffer that may not spill (no reserve).
var ErrSpillOff = errors.New("spool: the buffer is full and may not spill to disk")

// SpillStep is how much disk a Buffer reserves at a time: the reserve function sees one call per
// step, not one per write.
const SpillStep = 1 << 20

// chunkBytes is the unit of a Buffer's memory: a small file costs one chunk, a large one its bound,
// and nothing is ever copied to grow.
const chunkBytes = 64 << 10

// Buffer is written once, then read from the start: the first memLimit bytes in memory, the rest in
// a spool file created on the first byte past them. Every disk step is reserved through reserve
// before it is written; a refusal is returned from Write as is. Close frees both. Not safe for
// concurrent use.
type Buffer struct {
	dir      *Dir
	memLimit int64
	reserve  func(n int64) error // nil: the buffer may not spill
	mem      [][]byte            // chunks of chunkBytes (the last one maybe shorter), each full but the last
	memSize  int64
	file     *os.File
	fileSize int64
	reserved int64
	closed   bool
}

// NewBuffer is a Buffer of d holding up to memLimit bytes in memory. reserve is asked for each
// SpillStep of disk before it is used; nil means the buffer never spills (ErrSpillOff past memLimit).
func (d *Dir) NewBuffer(memLimit int64, reserve func(n int64) error) *Buffer {
	return &Buffer{dir: d, memLimit: max(memLimit, 0), reserve: reserve}
}

// Write appends p: to memory while it fits, then to the spool file.
func (b *Buffer) Write(p []byte) (int, error) {
	if b.closed {
		return 0, ErrClosed
	}
	n := 0
	if b.file == nil {
		n = b.toMemory(p)
		if n == len(p) {
			return n, nil
		}
	}
	m, err := b.toFile(p[n:])
	return n + m, err
}

// toMemory appends what fits under memLimit, a chunk at a time, and returns how much it took.
func (b *Buffer) toMemory(p []byte) int {
	taken := 0
	for taken < len(p) && b.memSize < b.memLimit {
		last := len(b.mem) - 1
		if last < 0 || len(b.mem[last]) == cap(b.mem[last]) {
			b.mem = append(b.mem, make([]byte, 0, min(chunkBytes, b.memLimit-b.memSize)))
			last++
		}
		c := b.mem[last]
		n := min(len(p)-taken, cap(c)-len(c))
		b.mem[last] = append(c, p[taken:taken+n]...)
		b.memSize += int64(n)
		taken += n
	}
	return taken
}

// toFile writes p to the spool file, creating it and reserving disk as needed.
func (b *Buffer) toFile(p []byte) (int, error) {
	if b.reserve == nil {
		return 0, ErrSpillOff
	}
	for b.fileSize+int64(len(p)) > b.reserved {
		if err := b.reserve(SpillStep); err != nil {
			return 0, err
		}
		b.reserved += SpillStep
	}
	if b.file == nil {
		f, err := b.dir.create()
		if err != nil {
			return 0, err
		}
		b.file = f
	}
	n, err := b.file.Write(p)
	if errors.Is(err, os.ErrClosed) {
		err = ErrClosed // Dir.Close closed it: a shutdown
	}
	b.fileSize += int64(n)
	b.dir.bytes.Add(int64(n))
	return n, err
}

// Size is the number of bytes written.
func (b *Buffer) Size() int64 { return b.memSize + b.fileSize }

// Spilled reports whether part of the buffer is on disk.
func (b *Buffer) Spilled() bool { return b.file != nil }

// Reserved is the disk the buffer reserved so far (a multiple of SpillStep): what its owner gives
// back after Close.
func (b *Buffer) Reserved() int64 { return b.reserved }

// Reader reads the bytes written, from the start. Write no more once reading began.
func (b *Buffer) Reader() io.Reader {
	rs := make([]io.Reader, 0, len(b.mem)+1)
	for _, c := range b.mem {
		rs = append(rs, bytes.NewReader(c))
	}
	if b.file != nil {
		rs = append(rs, io.NewSectionReader(fileAt{b.file}, 0, b.fileSize))
	}
	return io.MultiReader(rs...)
}

// Close frees the memory and removes the spool file; it is safe to call again.
func (b *Buffer) Close() error {
	if b.closed {
		return nil
	}
	b.closed, b.mem = true, nil
	if b.file == nil {
		return nil
	}
	b.dir.bytes.Add(-b.fileSize)
	return b.dir.release(b.file)
}

// fileAt reads a spool file, reporting a file Dir.Close closed (a shutdown) as ErrClosed.
type fileAt struct{ f *os.File }

func (r fileAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.f.ReadAt(p, off)
	if errors.Is(err, os.ErrClosed) {
		err = ErrClosed
	}
	return n, err
}
