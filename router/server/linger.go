package server

import (
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// lingerBound caps how long the router goes on reading, and throwing away, an audio upload it
// answered before reading it to its end: a refusal mid-body, or a member that answered early.
//
// Such a connection is closed after its answer (relayForm says why it is never reused). A caller
// still sending when it closes gets a reset, and a reset can destroy the answer the caller has not
// read yet: its client reports "connection reset by peer" instead of the 400 or 413 it was sent.
// net/http's own short wait before the close covers only some of these cases, and none once a read
// deadline has cut the body. Reading on until the caller's body ends, as nginx's lingering close
// does, lets the answer arrive; past the bound (or limits.max_audio_bytes more bytes) the connection
// closes as before. The lease and the decision record are finished first: lingering holds only
// the connection.
const lingerBound = 5 * time.Second

// linger is what an audio request leaves to do once its attempt is finished.
type linger struct {
	enc   *encoder // an encoder not yet joined: the answer came while it was still reading the body
	limit int64    // the most bytes read on (limits.max_audio_bytes)
}

// finish flushes the answer, then reads the caller's body on to its end, within lingerBound, when
// the connection is to close with the body unread. It runs only when the handler returns normally.
func (l *linger) finish(c *gin.Context) {
	if !closesUnread(c) {
		if l.enc != nil {
			<-l.enc.done // the caller's body ended as the answer began: the encoder stops at once
		}
		return
	}
	rc := http.NewResponseController(c.Writer)
	_ = rc.Flush() // the caller has the whole answer before anything more is read
	_ = rc.SetReadDeadline(time.Now().Add(lingerBound))
	if l.enc != nil {
		<-l.enc.done // its pipe is closed: it stops at its next write, or at the deadline
	}
	_, _ = io.CopyN(io.Discard, c.Request.Body, l.limit)
}

// closesUnread reports whether the answer is written and its connection marked to close: the mark
// the audio handlers (openForm, uploadWriter, joinEncoder) set when the body was not read to its end.
func closesUnread(c *gin.Context) bool {
	return c.Writer.Written() && c.Writer.Header().Get("Connection") == "close"
}
