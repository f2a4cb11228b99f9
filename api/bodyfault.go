package api

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
)

// A request body that cannot be read (truncated, bad chunked encoding,
// sent too slowly for the read timeout) is the client's fault, whatever
// the handler that was reading it makes of the error. bodyGuard records
// the first such failure; once it has, any error answer the handler starts
// is replaced by 400 or 408 about the body, so no handler (the registry's
// and Avro paths included) can turn it into a 500.

// bodyFault is a failed read of the request body.
type bodyFault struct{ err error }

func (f *bodyFault) Error() string { return "read the request body: " + f.err.Error() }
func (f *bodyFault) Unwrap() error { return f.err }

func (f *bodyFault) timeout() bool {
	var ne net.Error
	return errors.Is(f.err, os.ErrDeadlineExceeded) || errors.As(f.err, &ne) && ne.Timeout()
}

// faultReader wraps a request body and keeps its first read failure. The
// size limit's *http.MaxBytesError is not a fault of this kind: handlers
// answer 413 for it themselves.
type faultReader struct {
	io.ReadCloser
	fault *bodyFault
}

func (r *faultReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil && err != io.EOF && !isTooBig(err) {
		if r.fault == nil {
			r.fault = &bodyFault{err: err}
		}
		return n, r.fault
	}
	return n, err
}

func isTooBig(err error) bool {
	var tooBig *http.MaxBytesError
	return errors.As(err, &tooBig)
}

// guardedBody is a request's faultReader and faultWriter in one allocation.
type guardedBody struct {
	body   faultReader
	answer faultWriter
}

// guard wraps r's body (already size-limited) and w. Under observe, w is
// the request's recorder and the guard lives in it.
func guard(w http.ResponseWriter, body io.ReadCloser) (*faultWriter, *faultReader) {
	var g *guardedBody
	if rec, ok := w.(*recorder); ok {
		g = &rec.guarded
	} else {
		g = new(guardedBody)
	}
	*g = guardedBody{body: faultReader{ReadCloser: body}}
	g.answer = faultWriter{ResponseWriter: w, body: &g.body}
	return &g.answer, &g.body
}

// faultWriter answers for the body once the handler starts an error answer
// after a body fault, and drops what the handler then writes.
type faultWriter struct {
	http.ResponseWriter
	body     *faultReader
	replaced bool
}

func (w *faultWriter) WriteHeader(status int) {
	if f := w.body.fault; f != nil && status >= 400 && status != http.StatusRequestEntityTooLarge && !w.replaced {
		w.replaced = true
		if f.timeout() {
			writeError(w.ResponseWriter, http.StatusRequestTimeout, codeBodyTimeout, f.Error())
		} else {
			writeError(w.ResponseWriter, http.StatusBadRequest, codeBodyUnreadable, f.Error())
		}
		return
	}
	if !w.replaced {
		w.ResponseWriter.WriteHeader(status)
	}
}

func (w *faultWriter) Write(b []byte) (int, error) {
	if w.replaced {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *faultWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.replaced {
		f.Flush()
	}
}

func (w *faultWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// setErrorCode passes writeError's code on to the request recorder.
func (w *faultWriter) setErrorCode(code int) {
	if rec, ok := w.ResponseWriter.(errorCodeSetter); ok && !w.replaced {
		rec.setErrorCode(code)
	}
}
