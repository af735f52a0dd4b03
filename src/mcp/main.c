/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddock-mcp: `paddock mcp` as a program of its own, which `paddock` execs (cli/main.c).
 * An MCP server lives long and often gives its sandboxes egress, so it links everything of
 * libpaddock (module.h) and libevent's HTTP for --http; `paddock`, whose one-shot runs start
 * thousands of times, links neither.
 */
#include "cli.h"

int main(int argc, char **argv)
{
	return cmd_mcp(argc, argv);
}
