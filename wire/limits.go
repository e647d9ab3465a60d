package wire

import (
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka 4.4's decoding limits (MessageUtil and the generated readers): an
// array or collection may not hold more than MaxArrayElements elements, a
// struct not more than MaxTaggedFields tagged fields; a request that does
// is malformed and its connection is closed.
const (
	MaxArrayElements = 1_000_000
	MaxTaggedFields  = 10_000
)

// minLimitedBytes is the smallest body that can break a limit: every array
// element takes at least one byte and every tagged field two.
const minLimitedBytes = 2 * MaxTaggedFields

var tagsType = reflect.TypeFor[kmsg.Tags]()

// checkLimits walks a decoded request and reports the first array longer
// than MaxArrayElements or struct with more than MaxTaggedFields unknown
// tagged fields.
//
// kmsg already refuses an array whose announced length needs more bytes
// than remain (each element type has a minimum encoded size), so the
// memory a body can make kmsg allocate is a bounded multiple of its size:
// measured at most 16x for arrays and 43x for tagged fields (a map entry
// per distinct tag; TestDecodeAllocationBound). This walk adds Kafka's
// absolute limits on top.
func checkLimits(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return checkLimits(v.Elem())
	case reflect.Struct:
		if v.Type() == tagsType {
			t := v.Interface().(kmsg.Tags)
			if n := t.Len(); n > MaxTaggedFields {
				return fmt.Errorf("%d tagged fields, more than %d", n, MaxTaggedFields)
			}
			return nil
		}
		for i := range v.NumField() {
			if err := checkLimits(v.Field(i)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			// A bytes field ([]byte) is one length-prefixed value, not an array:
			// Kafka bounds it by the request size alone.
			return nil
		}
		if v.Len() > MaxArrayElements {
			return fmt.Errorf("array of %d elements, more than %d", v.Len(), MaxArrayElements)
		}
		if k := v.Type().Elem().Kind(); k == reflect.Struct || k == reflect.Pointer {
			for i := range v.Len() {
				if err := checkLimits(v.Index(i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
