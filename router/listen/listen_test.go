package listen

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unbindable is an address no local socket can bind (TEST-NET-1): binding it fails, so a test
// proves a listener came from the passed socket and not from the config.
const unbindable = "192.0.2.1:80"

// held is a socket the test holds as systemd would, and the file it passes under a name.
func held(t *testing.T, name string) (net.Listener, *os.File) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln, named(t, ln.(*net.TCPListener), name)
}

// named duplicates c's descriptor into a file carrying name, as LISTEN_FDNAMES names fd 3, 4, ...
func named(t *testing.T, c syscall.Conn, name string) *os.File {
	t.Helper()
	raw, err := c.SyscallConn()
	require.NoError(t, err)
	var fd int
	var dupErr error
	require.NoError(t, raw.Control(func(s uintptr) { fd, dupErr = syscall.Dup(int(s)) }))
	require.NoError(t, dupErr)
	return os.NewFile(uintptr(fd), name)
}

// serves proves ln accepts the connections dialed to addr.
func serves(t *testing.T, ln net.Listener, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	a, err := ln.Accept()
	require.NoError(t, err)
	assert.Equal(t, c.LocalAddr().String(), a.RemoteAddr().String())
	_ = a.Close()
}

func TestOpenAdoptsByName(t *testing.T) {
	t.Run("not activated binds the config's addresses", func(t *testing.T) {
		l, err := open(t.Context(), nil, Addrs{API: "127.0.0.1:0", Metrics: "127.0.0.1:0"})
		require.NoError(t, err)
		defer l.Close()
		require.NotNil(t, l.API)
		require.NotNil(t, l.Metrics)
		assert.Empty(t, l.Activated)
		serves(t, l.API, l.API.Addr().String())
	})
	t.Run("no metrics address and no metrics socket: no metrics listener", func(t *testing.T) {
		l, err := open(t.Context(), nil, Addrs{API: "127.0.0.1:0"})
		require.NoError(t, err)
		defer l.Close()
		assert.Nil(t, l.Metrics)
	})
	t.Run("two sockets in either order match by name", func(t *testing.T) {
		for _, order := range [][]string{{APIName, MetricsName}, {MetricsName, APIName}} {
			t.Run(order[0]+" first", func(t *testing.T) {
				addrs := map[string]string{}
				var files []*os.File
				for _, name := range order {
					ln, f := held(t, name)
					addrs[name] = ln.Addr().String()
					files = append(files, f)
				}
				l, err := open(t.Context(), files, Addrs{API: unbindable, Metrics: unbindable})
				require.NoError(t, err)
				defer l.Close()
				assert.Equal(t, order, l.Activated, "in the order systemd passed them")
				assert.True(t, l.IsActivated(APIName))
				assert.Equal(t, addrs[APIName], l.API.Addr().String())
				assert.Equal(t, addrs[MetricsName], l.Metrics.Addr().String())
				serves(t, l.API, addrs[APIName])
				serves(t, l.Metrics, addrs[MetricsName])
				for _, f := range files {
					assert.Equal(t, ^uintptr(0), f.Fd(), "the passed descriptor is closed; the listener holds its own")
				}
			})
		}
	})
	t.Run("front door passed, metrics bound on metrics.listen", func(t *testing.T) {
		ln, f := held(t, APIName)
		l, err := open(t.Context(), []*os.File{f}, Addrs{API: unbindable, Metrics: "127.0.0.1:0"})
		require.NoError(t, err)
		defer l.Close()
		assert.Equal(t, []string{APIName}, l.Activated)
		assert.False(t, l.IsActivated(MetricsName))
		assert.Equal(t, ln.Addr().String(), l.API.Addr().String())
		require.NotNil(t, l.Metrics)
	})
	t.Run("a metrics socket is served without metrics.listen", func(t *testing.T) {
		_, api := held(t, APIName)
		_, metrics := held(t, MetricsName)
		l, err := open(t.Context(), []*os.File{api, metrics}, Addrs{API: unbindable})
		require.NoError(t, err)
		defer l.Close()
		assert.NotNil(t, l.Metrics)
	})
	t.Run("only metrics passed: the front door binds listen", func(t *testing.T) {
		_, metrics := held(t, MetricsName)
		l, err := open(t.Context(), []*os.File{metrics}, Addrs{API: "127.0.0.1:0"})
		require.NoError(t, err)
		defer l.Close()
		assert.Equal(t, []string{MetricsName}, l.Activated)
		serves(t, l.API, l.API.Addr().String())
	})
}

func TestOpenRefuses(t *testing.T) {
	regular := func(t *testing.T) *os.File {
		f, err := os.Create(filepath.Join(t.TempDir(), "not-a-socket"))
		require.NoError(t, err)
		defer f.Close()
		return named(t, f, APIName)
	}
	udp := func(t *testing.T) *os.File {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = pc.Close() })
		return named(t, pc.(*net.UDPConn), APIName)
	}
	tests := []struct {
		name   string
		files  func(t *testing.T) []*os.File
		addrs  Addrs
		isErr  error
		substr string
	}{
		{"unnamed socket (the unit's default name)", func(t *testing.T) []*os.File {
			_, f := held(t, "anvil-router.socket")
			return []*os.File{f}
		}, Addrs{API: "127.0.0.1:0"}, ErrActivation, `socket "anvil-router.socket": the router takes only sockets named "anvil-api" or "anvil-metrics"`},
		{"name passed twice", func(t *testing.T) []*os.File {
			_, a := held(t, APIName)
			_, b := held(t, APIName)
			return []*os.File{a, b}
		}, Addrs{API: "127.0.0.1:0"}, ErrActivation, `socket "anvil-api" passed more than once`},
		{"not a socket", func(t *testing.T) []*os.File { return []*os.File{regular(t)} },
			Addrs{API: "127.0.0.1:0"}, ErrActivation, `socket "anvil-api" is not a listening stream socket`},
		{"datagram socket", func(t *testing.T) []*os.File { return []*os.File{udp(t)} },
			Addrs{API: "127.0.0.1:0"}, ErrActivation, `socket "anvil-api" is not a listening stream socket`},
		{"metrics address cannot be bound", func(t *testing.T) []*os.File {
			_, f := held(t, APIName)
			return []*os.File{f}
		}, Addrs{API: unbindable, Metrics: unbindable}, nil, "listen: metrics listener: listen tcp " + unbindable},
		{"front door cannot be bound", func(*testing.T) []*os.File { return nil },
			Addrs{API: unbindable}, nil, "listen: listen tcp " + unbindable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := tt.files(t)
			l, err := open(t.Context(), files, tt.addrs)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.substr)
			if tt.isErr != nil {
				assert.ErrorIs(t, err, tt.isErr)
			} else {
				assert.NotErrorIs(t, err, ErrActivation)
			}
			assert.Equal(t, Listeners{}, l, "nothing is returned half open")
			for _, f := range files {
				assert.Equal(t, ^uintptr(0), f.Fd(), "every passed descriptor is closed")
			}
		})
	}
}

// Open reads the activation environment once and clears it; sockets meant for another process
// (LISTEN_PID names someone else) are not taken.
func TestOpenConsumesTheEnvironment(t *testing.T) {
	t.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()+1))
	t.Setenv("LISTEN_FDS", "1")
	t.Setenv("LISTEN_FDNAMES", APIName)
	l, err := Open(t.Context(), Addrs{API: "127.0.0.1:0"})
	require.NoError(t, err)
	defer l.Close()
	assert.Empty(t, l.Activated)
	for _, k := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		_, set := os.LookupEnv(k)
		assert.False(t, set, k)
	}
}

// The socket units shipped under deploy/systemd name their sockets as Open matches them.
func TestShippedSocketUnitsUseTheseNames(t *testing.T) {
	for unit, want := range map[string]string{"anvil-router.socket": APIName, "anvil-router-metrics.socket": MetricsName} {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "systemd", unit))
		require.NoError(t, err)
		assert.Contains(t, strings.Split(string(b), "\n"), "FileDescriptorName="+want, unit)
	}
}
