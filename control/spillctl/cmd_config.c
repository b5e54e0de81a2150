/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The commands on the instance as a whole: print the running configuration,
 * save the state file, and drain or undrain the routes announced through
 * BIRD; each beside its row of the command table.
 */
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include <jansson.h>

#include "conn.h"
#include "render.h"
#include "spillctl.h"

static int
cmd_config_get(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	(void)a;
	return spillctl_call_json(cli, "config_get", NULL, &spillctl_shape_object);
}

static const struct spillctl_command config_get_cmd = {
        .name = "config get",
        .synopsis = "",
        .summary = "print the running configuration",
        .help = "Prints the whole running configuration document (method \"config_get\"),\n"
                "in the configuration file's format, as JSON.\n"
                "\n"
                "Example:\n"
                "  spillctl config get > running.json\n",
        .run = cmd_config_get,
};

static int
cmd_config_save(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	json_t *res;
	int rc = spillctl_call_print(cli, "config_save", NULL, &spillctl_shape_config_save, &res);

	(void)a;
	if (res != NULL) {
		printf("configuration saved to %s\n", spillctl_jtext(res, "path", "?"));
		json_decref(res);
	}
	return rc;
}

static const struct spillctl_command config_save_cmd = {
        .name = "config save",
        .synopsis = "",
        .summary = "write the state file now",
        .help = "Asks the server to write its state file (--state) now (method\n"
                "\"config_save\"). Accepted changes are already written before their reply;\n"
                "this is for a first save or after restoring the file. Fails with code\n"
                "-32603 when spillwayd has no state file.\n"
                "\n"
                "Example:\n"
                "  spillctl config save\n",
        .run = cmd_config_save,
};

/*
 * The drain reply comes before BIRD's answer (docs/control-protocol.md): poll
 * stats until hooks.bird is in step or its exchange is over (it failed and is
 * retried), at most the announcer's timeout plus a second. *res is replaced
 * by the last stats seen.
 */
static void
wait_bird(struct spillctl_cli *cli, json_t **res)
{
	const json_t *bird = json_object_get(json_object_get(*res, "hooks"), "bird");
	int64_t end = spillctl_now_ns() + (spillctl_jint(bird, "timeout_ms") + 1000) * 1000000;

	while (bird != NULL && json_is_true(json_object_get(bird, "pending")) &&
	       json_is_true(json_object_get(bird, "in_flight")) && spillctl_now_ns() < end) {
		json_t *st;

		nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
		if (spillctl_call(cli, "stats", NULL, &spillctl_shape_stats, &st) !=
		    SPILLCTL_EXIT_OK)
			return;
		json_object_set(*res, "hooks", json_object_get(st, "hooks"));
		json_decref(st);
		bird = json_object_get(json_object_get(*res, "hooks"), "bird");
	}
}

/* "drain" (@on) or "undrain", then what BIRD has from spillwayd once it answered. */
static int
drain_common(struct spillctl_cli *cli, bool on)
{
	const json_t *bird;
	json_t *res;
	int rc = spillctl_call_print(cli, on ? "drain" : "undrain", NULL, &spillctl_shape_drain,
	                             &res);

	if (res == NULL)
		return rc;
	wait_bird(cli, &res);
	bird = json_object_get(json_object_get(res, "hooks"), "bird");
	printf("%s\n",
	       on ? "drained: routes withdrawn, still forwarding" : "undrained: routes announced");
	if (bird != NULL) {
		const json_t *err = json_object_get(bird, "last_error");

		printf("bird: %lld prefix(es) announced%s\n",
		       (long long)spillctl_jint(bird, "announced"),
		       json_is_true(json_object_get(bird, "pending"))
		               ? ", BIRD not in step yet (retrying)"
		               : "");
		if (json_is_true(json_object_get(bird, "pending")) && json_is_string(err))
			printf("bird: last error: %s\n", spillctl_esc(json_string_value(err)));
	}
	json_decref(res);
	return rc;
}

static int
cmd_drain(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	(void)a;
	return drain_common(cli, true);
}

static const struct spillctl_command drain_cmd = {
        .name = "drain",
        .synopsis = "",
        .summary = "withdraw this instance's routes, keep forwarding",
        .help = "Asks spillwayd to withdraw every VIP route it announces through BIRD and\n"
                "to keep them withdrawn across changes (method \"drain\"), while it goes\n"
                "on forwarding what still reaches it: the routers move new traffic to the\n"
                "other instances. Waits for BIRD's answer (at most its timeout and a\n"
                "second), then prints how many prefixes BIRD still has from spillwayd\n"
                "(0 once BIRD confirmed; otherwise the error, and spillwayd retries). Fails with "
                "code -32603 when spillwayd runs\n"
                "without --bird-include/--bird-socket. See docs/scale-out.md.\n"
                "\n"
                "Example:\n"
                "  spillctl drain && sleep 5 && systemctl stop spillway\n",
        .run = cmd_drain,
};

static int
cmd_undrain(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	(void)a;
	return drain_common(cli, false);
}

static const struct spillctl_command undrain_cmd = {
        .name = "undrain",
        .synopsis = "",
        .summary = "announce this instance's routes again",
        .help = "Ends a drain (method \"undrain\"): every VIP address with a usable backend\n"
                "is announced through BIRD again.\n"
                "\n"
                "Example:\n"
                "  spillctl undrain\n",
        .run = cmd_undrain,
};

const struct spillctl_command *const spillctl_cmds_config[] = {
        &config_get_cmd, &config_save_cmd, &drain_cmd, &undrain_cmd, NULL,
};
