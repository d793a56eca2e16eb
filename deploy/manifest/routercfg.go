package manifest

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"
)

// routerConfig is the part of the router's normalized config (what `anvil-router config check`
// prints, defaults filled in) that the deployment depends on.
type routerConfig struct {
	Listen        string `json:"listen"`
	ShutdownGrace string `json:"shutdown_grace"`
	Upstream      struct {
		Timeout string `json:"timeout"`
	} `json:"upstream"`
	IntentFile string `json:"intent_file"`
	TLS        *struct {
		CertFile string `json:"cert_file"`
	} `json:"tls"`
	DecisionLog struct {
		JSONLPath string `json:"jsonl_path"`
	} `json:"decision_log"`
	Tiers []struct {
		ID          string `json:"id"`
		Kind        string `json:"kind"`
		ServedModel string `json:"served_model"`
		Host        string `json:"host"`
		APIKeyEnv   string `json:"api_key_env"`
		Members     []struct {
			ID       string `json:"id"`
			Endpoint string `json:"endpoint"`
		} `json:"members"`
	} `json:"tiers"`

	grace      time.Duration
	timeout    time.Duration // upstream.timeout: the longest one attempt, streaming included, may run
	listenHost string
	listenPort int32
}

// rawAuth is the auth section of the config as written: the normalized output redacts credentials
// and, when the check supplies tokens through the environment, no longer names the files.
type rawAuth struct {
	Auth struct {
		CallerTokensFile string   `json:"caller_tokens_file"`
		CallerTokens     []string `json:"caller_tokens"`
		AdminTokenFile   string   `json:"admin_token_file"`
		AdminToken       string   `json:"admin_token"`
		ObserverFile     string   `json:"observer_tokens_file"`
		ObserverTokens   []string `json:"observer_tokens"`
	} `json:"auth"`
}

// parseRouterConfig reads the normalized document; the router has already accepted it, so a failure
// here means the two disagree about the format, which is itself worth reporting.
func parseRouterConfig(normalized []byte) (*routerConfig, error) {
	var c routerConfig
	if err := yaml.Unmarshal(normalized, &c); err != nil {
		return nil, fmt.Errorf("normalized config: %w", err)
	}
	var err error
	if c.grace, err = time.ParseDuration(c.ShutdownGrace); err != nil {
		return nil, fmt.Errorf("normalized config: shutdown_grace: %w", err)
	}
	if c.timeout, err = time.ParseDuration(c.Upstream.Timeout); err != nil {
		return nil, fmt.Errorf("normalized config: upstream.timeout: %w", err)
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return nil, fmt.Errorf("normalized config: listen: %w", err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("normalized config: listen port: %w", err)
	}
	c.listenHost, c.listenPort = host, int32(p)
	return &c, nil
}

func parseRawAuth(doc []byte) (rawAuth, error) {
	var a rawAuth
	if err := yaml.Unmarshal(doc, &a); err != nil {
		return rawAuth{}, fmt.Errorf("config auth: %w", err)
	}
	return a, nil
}

// endpointHostPort splits a member endpoint URL into host and port (the scheme's default if none).
func endpointHostPort(endpoint string) (string, int32, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", 0, err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("endpoint port: %w", err)
	}
	return u.Hostname(), int32(p), nil
}
