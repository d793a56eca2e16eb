package server

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/ident"
)

const (
	headerRequestID = "X-Request-ID"
	ctxRequestID    = "anvil.request_id"
)

// withRequestID accepts a well-formed X-Request-ID from the caller or makes one, and returns it on the
// response, so a caller can correlate its logs with the router's decision records.
func withRequestID(c *gin.Context) {
	id := c.GetHeader(headerRequestID)
	if !ident.ValidRequestID(id) {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	c.Set(ctxRequestID, id)
	c.Header(headerRequestID, id)
	c.Next()
}

func requestID(c *gin.Context) string { return c.GetString(ctxRequestID) }

// bearer extracts the token of an "Authorization: Bearer <token>" header.
func bearer(c *gin.Context) (string, bool) {
	h := c.GetHeader("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// requireToken authenticates against a set of secrets. Every secret is compared, in constant time per
// comparison, so timing does not reveal which one matched.
func requireToken(secrets []config.Secret, refusal apiError) gin.HandlerFunc {
	return func(c *gin.Context) {
		token, ok := bearer(c)
		matched := false
		for _, s := range secrets {
			if ok && s.Matches(token) {
				matched = true
			}
		}
		if !matched {
			abort(c, refusal)
			return
		}
		c.Next()
	}
}
