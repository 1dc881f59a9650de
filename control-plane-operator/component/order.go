package component

import "fmt"

// Order returns components so that each comes after everything it depends
// on, keeping the given order otherwise. It fails on a dependency that is
// not among them or on a cycle.
func Order(components []Component) ([]Component, error) {
	byName := map[string]Component{}
	for _, c := range components {
		byName[c.Name()] = c
	}
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var ordered []Component
	var visit func(c Component) error
	visit = func(c Component) error {
		switch state[c.Name()] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("components depend on each other in a cycle through %s", c.Name())
		}
		state[c.Name()] = visiting
		for _, dep := range c.DependsOn() {
			d, ok := byName[dep]
			if !ok {
				return fmt.Errorf("component %s depends on %s, which is not a component", c.Name(), dep)
			}
			if err := visit(d); err != nil {
				return err
			}
		}
		state[c.Name()] = done
		ordered = append(ordered, c)
		return nil
	}
	for _, c := range components {
		if err := visit(c); err != nil {
			return nil, err
		}
	}
	return ordered, nil
}
