package render

import "github.com/tmplop/operator/engine/render/internal/fastyaml"

// decodeValue decodes one document of a template's output into what the
// API server would return for it (whole numbers as int64, only JSON's
// types), the fast path first: see internal/fastyaml.
func decodeValue(data []byte) (any, error) { return fastyaml.Decode(data) }
