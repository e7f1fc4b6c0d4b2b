#define _GNU_SOURCE
#include "conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"
#include "util.h"

struct conv *conv_new(struct mcp *m, const struct auth *a, int owner, bool legacy, bool ephemeral, mcp_send_fn send)
{
	struct conv *c = util_xalloc(sizeof *c);
	util_random_hex(c->id, 32);
	c->owner = owner;
	c->legacy = legacy;
	c->ephemeral = ephemeral;
	c->last_used = util_now_ms();
	char principal[AUTH_PRINCIPAL_LEN + 1];
	auth_principal(a, owner, principal);
	c->cl = mcp_client_new(m, (unsigned)owner, principal, send, c);
	mcp_client_auth(c->cl, a);
	return c;
}

struct conv *conv_find(struct conv *list, const char *id, int owner, bool legacy)
{
	if (!id)
		return NULL;
	for (struct conv *c = list; c; c = c->next)
		if (c->owner == owner && c->legacy == legacy && !strcmp(c->id, id))
			return c;
	return NULL;
}

void conv_free(struct conv *c)
{
	mcp_client_free(c->cl);
	for (int i = 0; i < CONV_RING_EVENTS; i++)
		free(c->ring[i].text);
	free(c);
}

uint64_t conv_event(struct conv *c, jv msg, char **text, size_t *len)
{
	size_t n = 0;
	char *line = jv_is_valid(msg) ? rec_dump(msg, &n) : NULL; /* consumes msg */
	uint64_t id = ++c->event_id;
	*text = line ? util_fmt("id: %llu\nevent: message\ndata: %.*s\n", (unsigned long long)id, (int)n, line)
		     : util_fmt("id: %llu\ndata:\n\n", (unsigned long long)id); /* a stream's first: where it is */
	free(line);
	*len = strlen(*text);
	return id;
}

void conv_keep(struct conv *c, uint64_t id, uint64_t tag, char *text, size_t len)
{
	int slot = (int)(id % CONV_RING_EVENTS);
	if (c->ring[slot].text)
		c->ring_bytes -= c->ring[slot].len;
	free(c->ring[slot].text);
	c->ring[slot].text = NULL;
	if (len > CONV_EVENT_MAX) {
		free(text);
		return;
	}
	/* Oldest first out, within the byte budget. */
	for (uint64_t old = id > CONV_RING_EVENTS ? id - CONV_RING_EVENTS + 1 : 1;
	     c->ring_bytes + len > CONV_RING_BYTES && old < id; old++) {
		int o = (int)(old % CONV_RING_EVENTS);
		if (c->ring[o].text && c->ring[o].id == old) {
			c->ring_bytes -= c->ring[o].len;
			free(c->ring[o].text);
			c->ring[o].text = NULL;
		}
	}
	c->ring[slot].id = id;
	c->ring[slot].tag = tag;
	c->ring[slot].text = text;
	c->ring[slot].len = len;
	c->ring_bytes += len;
}

void conv_replay(const struct conv *c, uint64_t tag, uint64_t from, conv_emit_fn emit, void *arg)
{
	uint64_t first = c->event_id > CONV_RING_EVENTS ? c->event_id - CONV_RING_EVENTS + 1 : 1; /* the ring holds no older */
	for (uint64_t id = from + 1 > first ? from + 1 : first; id <= c->event_id; id++) {
		int slot = (int)(id % CONV_RING_EVENTS);
		if (c->ring[slot].text && c->ring[slot].id == id && c->ring[slot].tag == tag)
			emit(arg, c->ring[slot].text, c->ring[slot].len);
	}
}

uint64_t conv_event_tag(const struct conv *c, uint64_t id)
{
	int slot = (int)(id % CONV_RING_EVENTS);
	if (id > 0 && c->ring[slot].text && c->ring[slot].id == id)
		return c->ring[slot].tag;
	return 0;
}
