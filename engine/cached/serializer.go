package cached

import (
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
)

// codec decodes LIST responses into *List, watch events' envelopes by
// their bytes (decodeEvent) and their objects into *Object, and anything
// else (an error's Status) as plain JSON into what the caller asks for. It skips what a
// general serializer does first on every input: scanning the whole of it
// for apiVersion and kind.
type codec struct{}

var _ runtime.Serializer = codec{}

func (codec) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	switch into := into.(type) {
	case nil:
		o, err := decodeObject(data)
		if err != nil {
			return nil, nil, err
		}
		return o, nil, nil
	case *List:
		return into, nil, decodeList(data, into)
	case *metav1.WatchEvent:
		if decodeEvent(data, into) {
			return into, nil, nil
		}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, into); err != nil {
			return nil, nil, fmt.Errorf("decode watch event: %w", err)
		}
		return into, nil, nil
	case *Object:
		o, err := decodeObject(data)
		if err != nil {
			return nil, nil, err
		}
		c, ok := o.(*Object)
		if !ok {
			return o, nil, nil
		}
		*into = *c
		return into, nil, nil
	default:
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, into); err != nil {
			return nil, nil, fmt.Errorf("decode %T: %w", into, err)
		}
		return into, nil, nil
	}
}

func (codec) Encode(obj runtime.Object, w io.Writer) error {
	return json.NewEncoder(w).Encode(obj)
}

func (codec) Identifier() runtime.Identifier { return "tmplop-cached-json" }

// negotiated serves only JSON: what is cached is kept as JSON.
type negotiated struct{}

func (negotiated) SupportedMediaTypes() []runtime.SerializerInfo {
	return []runtime.SerializerInfo{{
		MediaType: "application/json", MediaTypeType: "application", MediaTypeSubType: "json",
		EncodesAsText: true, Serializer: codec{},
		StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: codec{}, Framer: lineFramer{}},
	}}
}

func (negotiated) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

func (negotiated) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}
