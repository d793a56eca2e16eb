package engine

// detailError carries a fixed detail message and unwraps to its sentinel.
type detailError struct {
	sentinel error
	detail   string
}

func (e *detailError) Error() string { return e.sentinel.Error() + ": " + e.detail }
func (e *detailError) Unwrap() error { return e.sentinel }

func errorf(sentinel error, detail string) error { return &detailError{sentinel, detail} }
