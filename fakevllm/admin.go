package fakevllm

import (
	"errors"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
)

// getFaults answers GET /admin/faults with the faults in force, in the same
// JSON a PUT accepts.
func (s *Server) getFaults(c *gin.Context) {
	c.JSON(http.StatusOK, s.faults.get())
}

// putFaults answers PUT and POST /admin/faults: the body (JSON or YAML; empty
// clears every fault) replaces the whole configuration, and the answer is the
// configuration now in force.
func (s *Server) putFaults(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxFaultsBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(c.Writer, &apiError{Status: http.StatusRequestEntityTooLarge, Message: "fault document exceeds 65536 bytes"})
			return
		}
		writeError(c.Writer, badRequest("", "could not read the request body"))
		return
	}
	f, err := ParseFaults(body)
	if err == nil {
		err = s.SetFaults(f)
	}
	switch {
	case errors.Is(err, ErrInvalidFaults):
		writeError(c.Writer, badRequest("", "%s", err.Error()))
		return
	case err != nil:
		writeError(c.Writer, &apiError{Status: http.StatusServiceUnavailable, Message: err.Error()})
		return
	}
	c.JSON(http.StatusOK, s.faults.get())
}
