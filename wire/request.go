package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestHeader is the decoded request header (v0, v1 or v2) of one frame.
// ClientID is nil when the client sent a null client id or when the header
// version has no client id (ControlledShutdown v0).
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      *string
}

var (
	// ErrUnknownAPIKey is returned by ParseRequest for an API key kmsg does not know.
	ErrUnknownAPIKey = errors.New("wire: unknown api key")
	// ErrUnsupportedVersion is returned by ParseRequest for a version outside [0, MaxVersion].
	ErrUnsupportedVersion = errors.New("wire: unsupported api version")
	// ErrMalformed is wrapped by every decoding error caused by truncated or invalid bytes.
	ErrMalformed = errors.New("wire: malformed request")
)

const keyControlledShutdown = 7
const keyAPIVersions = 18

// ParseRequest parses one frame (without the 4-byte size prefix) into its
// header and kmsg request. The header is v1 (key, version, correlation id,
// nullable client id), or v2 (plus tagged fields) when the request is
// flexible at that version; ControlledShutdown v0 uses header v0.
//
// For an unknown key it returns ErrUnknownAPIKey, and for a version outside
// kmsg's [0, MaxVersion] ErrUnsupportedVersion; in both cases hdr is filled
// as far as it could be decoded, so that the broker can answer (ApiVersions
// in its v0 shape). Truncated or invalid bytes give an error wrapping
// ErrMalformed. ParseRequest never panics.
//
// Byte fields of the request (Produce records among them) alias frame, so
// frame must not be reused while the request is in use; in-place batch edits
// (SetBaseOffset...) on those records write into frame.
func ParseRequest(frame []byte) (hdr RequestHeader, req kmsg.Request, err error) {
	defer func() {
		if r := recover(); r != nil {
			req = nil
			err = fmt.Errorf("%w: panic decoding key %d v%d: %v", ErrMalformed, hdr.APIKey, hdr.APIVersion, r)
		}
	}()
	if len(frame) < 8 {
		return hdr, nil, fmt.Errorf("%w: header needs 8 bytes, have %d", ErrMalformed, len(frame))
	}
	hdr.APIKey = int16(binary.BigEndian.Uint16(frame[0:]))
	hdr.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	hdr.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]

	req = kmsg.RequestForKey(hdr.APIKey)
	if req == nil {
		hdr.ClientID, _, _ = readClientID(rest)
		return hdr, nil, ErrUnknownAPIKey
	}
	if hdr.APIVersion < 0 || hdr.APIVersion > req.MaxVersion() {
		if hdr.APIKey != keyControlledShutdown || hdr.APIVersion != 0 {
			hdr.ClientID, _, _ = readClientID(rest)
		}
		return hdr, nil, ErrUnsupportedVersion
	}
	if hdr.APIKey != keyControlledShutdown || hdr.APIVersion != 0 {
		hdr.ClientID, rest, err = readClientID(rest)
		if err != nil {
			return hdr, nil, err
		}
	}
	req.SetVersion(hdr.APIVersion)
	if req.IsFlexible() {
		rest, err = SkipTags(rest)
		if err != nil {
			return hdr, nil, fmt.Errorf("%w: request header tags: %v", ErrMalformed, err)
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return hdr, nil, fmt.Errorf("%w: key %d v%d body: %v", ErrMalformed, hdr.APIKey, hdr.APIVersion, err)
	}
	if len(rest) >= minLimitedBytes {
		if err := checkLimits(reflect.ValueOf(req)); err != nil {
			return hdr, nil, fmt.Errorf("%w: key %d v%d body: %v", ErrMalformed, hdr.APIKey, hdr.APIVersion, err)
		}
	}
	return hdr, req, nil
}

// readClientID reads a nullable int16-length string.
func readClientID(b []byte) (*string, []byte, error) {
	if len(b) < 2 {
		return nil, b, fmt.Errorf("%w: client id length truncated", ErrMalformed)
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n == -1 {
		return nil, b, nil
	}
	if n < 0 || int(n) > len(b) {
		return nil, b, fmt.Errorf("%w: client id length %d with %d bytes left", ErrMalformed, n, len(b))
	}
	s := string(b[:n])
	return &s, b[n:], nil
}

var errTags = errors.New("bad tagged fields")

// SkipTags skips a tagged-field section (uvarint count, then uvarint tag,
// uvarint size and size bytes for each): a request header's, or a flexible
// response header's on the client side.
func SkipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) || count > MaxTaggedFields {
		return b, errTags
	}
	b = b[n:]
	for range count {
		_, n = binary.Uvarint(b)
		if n <= 0 {
			return b, errTags
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return b, errTags
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// AppendResponse appends a full response frame for the request described by
// hdr to dst: the int32 size prefix, the correlation id, the response header
// tagged fields when the response is flexible (except ApiVersions, whose
// response header is always v0), then the body. It sets resp's version to
// hdr.APIVersion first.
func AppendResponse(dst []byte, hdr RequestHeader, resp kmsg.Response) []byte {
	resp.SetVersion(hdr.APIVersion)
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(hdr.CorrelationID))
	if resp.IsFlexible() && resp.Key() != keyAPIVersions {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// AppendRequest appends a full request frame (size prefix, header, body) for
// req to dst, using hdr's correlation id and client id and setting req's
// version to hdr.APIVersion. It is the client-side mirror of ParseRequest,
// used by tests and tools.
func AppendRequest(dst []byte, hdr RequestHeader, req kmsg.Request) []byte {
	req.SetVersion(hdr.APIVersion)
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(hdr.APIVersion))
	dst = binary.BigEndian.AppendUint32(dst, uint32(hdr.CorrelationID))
	if req.Key() != keyControlledShutdown || hdr.APIVersion != 0 {
		if hdr.ClientID == nil {
			dst = binary.BigEndian.AppendUint16(dst, 0xffff)
		} else {
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(*hdr.ClientID)))
			dst = append(dst, *hdr.ClientID...)
		}
	}
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
