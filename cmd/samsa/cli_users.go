package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// runUsers is `samsa users list|describe|set|delete`: SCRAM credentials,
// stored by the brokers in the replicated metadata log
// (DescribeUserScramCredentials 50, AlterUserScramCredentials 51), as
// `kafka-configs --entity-type users --alter --add-config 'SCRAM-SHA-512=[...]'`
// manages them.
func runUsers(c *cli, args []string) error {
	return runActions(c, args, usersUsage, []action{
		{"list", usersList}, {"describe", usersList}, {"set", usersSet}, {"delete", usersDelete},
	})
}

const usersUsage = `Usage: samsa users <action> [flags]

  list | describe [USER...]          users with SCRAM credentials and their mechanisms
  set USER --password P [--mechanism SCRAM-SHA-512|SCRAM-SHA-256] [--iterations N]
                                     create or change a user's SCRAM credential
                                     (or --password-stdin: read it from the first line of stdin)
  delete USER... [--mechanism M]     remove a user's credential of one mechanism (default both)
`

type userJSON struct {
	User       string     `json:"user"`
	Mechanisms []credJSON `json:"mechanisms"`
	Error      string     `json:"error,omitempty"`
}

type credJSON struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

func usersList(c *cli, args []string) error {
	fs, co := c.flagSet("users describe", "[USER...] [flags]")
	if err := parse(fs, co, args); err != nil {
		return err
	}
	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	described, err := adm.DescribeUserSCRAMs(ctx, fs.Args()...)
	if err != nil {
		return err
	}
	out := []userJSON{}
	var failed []string
	t := newTable(c.stdout, "USER", "MECHANISMS")
	for _, d := range described.Sorted() {
		u := userJSON{User: d.User, Mechanisms: []credJSON{}}
		var mechs []string
		for _, ci := range d.CredInfos {
			u.Mechanisms = append(u.Mechanisms, credJSON{Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
			mechs = append(mechs, fmt.Sprintf("%s (%d iterations)", ci.Mechanism, ci.Iterations))
		}
		if d.Err != nil {
			u.Error = errText(d.Err, d.ErrMessage)
			failed = append(failed, d.User+": "+u.Error)
			mechs = []string{"error: " + u.Error}
		}
		out = append(out, u)
		t.row(d.User, strings.Join(mechs, ", "))
	}
	if co.format == "json" {
		if err := writeJSON(c.stdout, out); err != nil {
			return err
		}
	} else if err := t.flush(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return nil
}

// parseMechanism reads --mechanism.
func parseMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, usagef("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

func usersSet(c *cli, args []string) error {
	fs, co := c.flagSet("users set", "USER --password P [flags]")
	password := fs.String("password", "", "the user's password")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of stdin (keeps it out of the process list)")
	mechanism := fs.String("mechanism", "SCRAM-SHA-512", "SCRAM-SHA-512 or SCRAM-SHA-256")
	iterations := fs.Int32("iterations", 8192, "SCRAM iterations (4096 to 16384, as Kafka allows)")
	if err := parse(fs, co, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("give exactly one user")
	}
	if *fromStdin {
		line, err := readLine(c.stdin)
		if err != nil {
			return err
		}
		*password = line
	}
	if *password == "" {
		return usagef("--password (or --password-stdin) is required")
	}
	mech, err := parseMechanism(*mechanism)
	if err != nil {
		return err
	}
	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: fs.Arg(0), Mechanism: mech, Iterations: *iterations, Password: *password}})
	if err != nil {
		return err
	}
	return reportResults(c, co, "set", alteredResults(altered, fs.Args()))
}

func usersDelete(c *cli, args []string) error {
	fs, co := c.flagSet("users delete", "USER... [flags]")
	mechanism := fs.String("mechanism", "", "delete only this mechanism's credential (default: every one the user has)")
	if err := parse(fs, co, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("no user given")
	}
	var mech kadm.ScramMechanism
	if *mechanism != "" {
		m, err := parseMechanism(*mechanism)
		if err != nil {
			return err
		}
		mech = m
	}
	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	var del []kadm.DeleteSCRAM
	if *mechanism != "" {
		for _, user := range fs.Args() {
			del = append(del, kadm.DeleteSCRAM{User: user, Mechanism: mech})
		}
	} else {
		// Without --mechanism, only the mechanisms the user has are
		// deleted: deleting one that does not exist is an error in Kafka.
		described, err := adm.DescribeUserSCRAMs(ctx, fs.Args()...)
		if err != nil {
			return err
		}
		for _, user := range fs.Args() {
			for _, ci := range described[user].CredInfos {
				del = append(del, kadm.DeleteSCRAM{User: user, Mechanism: ci.Mechanism})
			}
		}
		if len(del) == 0 {
			return fmt.Errorf("no SCRAM credentials for %s", strings.Join(fs.Args(), ", "))
		}
	}
	altered, err := adm.AlterUserSCRAMs(ctx, del, nil)
	if err != nil {
		return err
	}
	return reportResults(c, co, "deleted", alteredResults(altered, fs.Args()))
}

func alteredResults(altered kadm.AlteredUserSCRAMs, users []string) []result {
	var rs []result
	for _, u := range users {
		res := result{Name: u}
		if a, ok := altered[u]; !ok {
			res.Error = "no answer for this user"
		} else if a.Err != nil {
			res.Error = errText(a.Err, a.ErrMessage)
		}
		rs = append(rs, res)
	}
	return rs
}

// readLine reads the first line of r, without its line ending.
func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
