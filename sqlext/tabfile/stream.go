package tabfile

// Stream is the text of a TSV or CSV file as bytes, decompressed when the
// file is gzip-compressed, for readers that split rows themselves (dpsql's
// batch commands split the rows of a TSV file on their workers). A TSV
// row is then a line without its trailing '\r' characters, split on '\t',
// as Reader reads it; Reader skips empty lines.
type Stream struct{ in *input }

// OpenStream opens path (gzip-compressed if its first bytes are the gzip
// magic number, whatever its name) as a byte stream.
func OpenStream(path string) (*Stream, error) {
	in, err := openInput(path)
	if err != nil {
		return nil, err
	}
	return &Stream{in: in}, nil
}

// Read reads the file's (decompressed) bytes.
func (s *Stream) Read(p []byte) (int, error) { return s.in.src.Read(p) }

// Progress returns how many bytes of the file (compressed bytes for gzip)
// have been read, and the file size. It is safe to call from another
// goroutine while the stream is read.
func (s *Stream) Progress() (read, size int64) { return s.in.progress() }

// Close closes the file.
func (s *Stream) Close() error { return s.in.close() }
