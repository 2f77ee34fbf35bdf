package contexts

import (
	"fmt"
	"slices"
)

// PolicyLineage answers whether one policy is the same as, or extends (so
// only restricts), another; policy.Set.Extends implements it.
type PolicyLineage interface {
	Extends(child, parent string) bool
}

// CheckRestricts checks that child may exist under parent: same principal
// and role, a policy that is the parent's or extends it, a subset of the
// parent's pools, and no execution phase under a parent in planning. Every
// problem wraps ErrWidens (or ErrInvalid for a malformed child).
func CheckRestricts(parent, child *Context, policies PolicyLineage) error {
	switch {
	case child.Parent != parent.ID:
		return fmt.Errorf("context %s: parent is %q, not %q: %w", child.ID, child.Parent, parent.ID, ErrInvalid)
	case child.Principal != parent.Principal:
		return fmt.Errorf("context %s: principal %q differs from the parent's %q: %w", child.ID, child.Principal, parent.Principal, ErrWidens)
	case child.Role != parent.Role:
		return fmt.Errorf("context %s: role %q differs from the parent's %q: %w", child.ID, child.Role, parent.Role, ErrWidens)
	case !ValidPhase(child.Phase):
		return fmt.Errorf("context %s: phase %q: %w", child.ID, child.Phase, ErrInvalid)
	case child.Phase == PhaseExecution && parent.Phase != PhaseExecution:
		return fmt.Errorf("context %s: execution phase under a parent in %s: %w", child.ID, parent.Phase, ErrWidens)
	case !policies.Extends(child.Policy, parent.Policy):
		return fmt.Errorf("context %s: policy %q is neither %q nor extends it: %w", child.ID, child.Policy, parent.Policy, ErrWidens)
	}
	for _, p := range child.Pools {
		if !slices.Contains(parent.Pools, p) {
			return fmt.Errorf("context %s: pool %q is not bound to the parent: %w", child.ID, p, ErrWidens)
		}
	}
	return nil
}
