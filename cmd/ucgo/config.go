package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ucgo/ucgo/bootstrap"
	"github.com/ucgo/ucgo/ucp"
)

// variable is one UCGO_* variable and how to show its effective value.
type variable struct {
	name  string
	value func(ucp.Config) string
}

func orAuto(n int, auto string) string {
	if n == 0 {
		return "auto (" + auto + ")"
	}
	if n < 0 {
		return "off"
	}
	return fmt.Sprint(n)
}

var variables = []variable{
	{ucp.EnvTLS, func(c ucp.Config) string {
		var s []string
		for _, t := range c.Transports {
			s = append(s, t.Name())
		}
		if len(s) == 0 {
			return "default"
		}
		return strings.Join(s, ",")
	}},
	{ucp.EnvShortThresh, func(c ucp.Config) string { return orAuto(c.ShortThresh, "the AM lane's short limit") }},
	{ucp.EnvZcopyThresh, func(c ucp.Config) string { return orAuto(c.ZcopyThresh, "4096") }},
	{ucp.EnvRndvThresh, func(c ucp.Config) string {
		if c.RndvThresh >= ucp.ThreshInf {
			return "inf"
		}
		return orAuto(c.RndvThresh, "one eager fragment of the AM lane")
	}},
	{ucp.EnvRndvScheme, func(c ucp.Config) string {
		if c.RndvScheme == ucp.RndvPut {
			return "put"
		}
		return "get"
	}},
	{ucp.EnvErrMode, func(c ucp.Config) string { return c.ErrorMode.String() }},
	{ucp.EnvKeepalive, func(c ucp.Config) string {
		switch {
		case c.KeepaliveInterval < 0:
			return "off"
		case c.KeepaliveInterval == 0:
			return "1s"
		}
		return c.KeepaliveInterval.String()
	}},
	{ucp.EnvSilentPeers, func(c ucp.Config) string { return fmt.Sprint(c.DetectSilentPeers) }},
	{ucp.EnvMatchingMode, func(c ucp.Config) string {
		if c.MatchingMode == ucp.MatchingNeverSuspend {
			return "never_suspend"
		}
		return "suspend"
	}},
	{ucp.EnvThreadSafe, func(c ucp.Config) string { return fmt.Sprint(c.ThreadSafe) }},
	{ucp.EnvNetDevices, func(c ucp.Config) string {
		if len(c.NetDevices) == 0 {
			return "default (rc on the first usable netdev)"
		}
		return strings.Join(c.NetDevices, ",")
	}},
	{ucp.EnvMaxRndvRails, func(c ucp.Config) string { return orAuto(c.MaxRndvRails, "2") }},
	{ucp.EnvStripeAlways, func(c ucp.Config) string { return fmt.Sprint(c.StripeAlways) }},
}

// printConfig prints every variable ucgo reads with its effective value
// (that of a context made from the zero Config under environ) and its
// source, then the UCGO_* variables of environ that ucgo does not read.
func printConfig(out io.Writer, environ []string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "UCGO_") {
			env[k] = v
		}
	}
	uc, err := ucp.NewContext(ucp.Config{})
	if err != nil {
		return fmt.Errorf("the environment's configuration is refused: %w", err)
	}
	cfg := uc.Config()
	uc.Close()
	source := func(name string) string {
		if v, ok := env[name]; ok && v != "" {
			delete(env, name)
			return fmt.Sprintf("environment (%s=%s)", name, v)
		}
		delete(env, name)
		return "default"
	}
	fmt.Fprintf(out, "# %-24s %-40s %s\n", "variable", "value", "source")
	for _, v := range variables {
		fmt.Fprintf(out, "  %-24s %-40s %s\n", v.name, v.value(cfg), source(v.name))
	}
	pmi := env[bootstrap.VersionEnv]
	if pmi == "" {
		pmi = "auto (offer PMI-2, speak what the launcher answers)"
	}
	fmt.Fprintf(out, "  %-24s %-40s %s\n", bootstrap.VersionEnv, pmi, source(bootstrap.VersionEnv))
	var unknown []string
	for k := range env {
		unknown = append(unknown, k)
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		fmt.Fprintf(out, "  %-24s %-40s %s\n", k, env[k], "environment, not read by ucgo (misspelt?)")
	}
	return nil
}
