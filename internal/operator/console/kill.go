package console

import "net/http"

type killData struct{ Engaged bool }

func (c *Console) killPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, "kill", "Kill switch", r)
	on, err := c.op.KillSwitch(r.Context())
	p.Data = killData{Engaged: on}
	if err != nil {
		// Unreadable state counts as engaged (fail closed), as it does
		// for the runner; say so.
		_, p.Error = c.publicError(err)
	}
	c.render(w, http.StatusOK, "kill", p)
}

// setKill engages or releases the switch through
// operator.API.SetKillSwitch, as `airlock kill` does: engaging writes
// the switch file first (it trips even if the record is late), releasing
// is audited before it takes effect.
func (c *Console) setKill(w http.ResponseWriter, r *http.Request, s *session) {
	action := r.PostForm.Get("action")
	if action != "engage" && action != "release" {
		http.Error(w, "action is engage or release", http.StatusBadRequest)
		return
	}
	engage := action == "engage"
	why, err := reason(r)
	if err == nil {
		err = c.op.SetKillSwitch(r.Context(), engage, s.principal, why)
	}
	if err != nil {
		status, msg := c.publicError(err)
		p := newPage(s, "kill", "Kill switch", r)
		on, _ := c.op.KillSwitch(r.Context())
		p.Data, p.Error = killData{Engaged: on}, msg
		c.render(w, status, "kill", p)
		return
	}
	done := "released"
	if engage {
		done = "engaged"
	}
	http.Redirect(w, r, Path+"/kill?done="+done, http.StatusSeeOther)
}
