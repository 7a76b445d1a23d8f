package render

import "context"

// Document renders the one template file of s over the dot built from
// in.Object (the dot every child template gets: .Object, .Spec, .Status,
// .Name, .Labels...) and decodes its output as a single YAML mapping: nil when
// it renders nothing. engine/convert renders a conversion with it, under
// in.Budget as a child render is.
//
// Its errors are *Error naming file (and its line when the render gives
// one), as Children's.
func (s *Set) Document(ctx context.Context, in Input, file string) (map[string]any, error) {
	if _, ok := s.files[file]; !ok {
		return nil, &Error{Template: file, Message: "template not among the files parsed"}
	}
	in.Dots = nil
	res, err := s.run(ctx, in, false, func(r *render) (*Result, error) {
		out, err := r.execute(file)
		if err != nil {
			return nil, err
		}
		doc, err := decodeSingle(file, out)
		if err != nil {
			return nil, err
		}
		return &Result{Status: doc}, nil
	})
	if err != nil {
		return nil, err
	}
	return res.Status, nil
}
