/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_chan.c - the channels: one step's sends and receives between
 * two members (chunks into the peer's slots, by write or by store into a
 * mapped region; acks and the window; direct transfers into a registered
 * destination and their registration cache; stalled peers probed).
 */
#include "coll_priv.h"

/* ------------------------------------------------------------------ */
/* Channels.                                                            */

static size_t step_chunk_len(struct coll_group *g, struct coll_step *s)
{
	size_t off = s->chunk * group_chunk_size(g);

	if (s->direct)
		return s->len;
	return s->len - off < group_chunk_size(g) ? s->len - off
						  : group_chunk_size(g);
}

int coll_fail_peer(struct coll_group *g, int err)
{
	g->state = G_FAILED;
	g->err = err ? err : FI_EIO;
	return -g->err;
}

#define CHAN_STALL_PASSES 8

/*
 * A stalled channel probes its peer once per period: a write the provider
 * fails (peer dead) fails the group, and so does a probe left unanswered
 * for probe_timeout ms (a provider that never notices; 0: never).
 */
static OFI_HOT int chan_stalled(struct coll_group *g, size_t peer)
{
	struct coll_chan *ch = &g->chan[peer];
	size_t limit = g->ce->probe_timeout;
	uint64_t now;
	ssize_t ret;

	/* Most stalls end within a pass or two (a round trip's wait): the
	 * probe is looked at, and the clock read, every CHAN_STALL_PASSES-th
	 * stalled pass only (the clock's pages are a cost of their own,
	 * see OFI_HOT). */
	if (++ch->stalls % CHAN_STALL_PASSES)
		return 0;
	now = coll_pass_ms(g->ce);
	if (!coll_rma_poll(&ch->probe)) {
		if (limit && now - ch->probe_ms > limit)
			return coll_fail_peer(g, FI_ETIMEDOUT);
		return 0;
	}
	if (ch->probe.err && ch->probe.err != FI_EAGAIN)
		return coll_fail_peer(g, FI_EIO);
	if (now - ch->probe_ms < OFI_COLL_PROBE_MS)
		return 0;
	ch->probe_ms = now;
	ret = coll_rma_write_word(g, peer, &ch->probe,
				  coll_hello_value(g, COLL_HELLO),
				  region_hello_word(g->n, g->me), true);
	if (ret && ret != -FI_EAGAIN)
		return coll_fail_peer(g, FI_EIO);
	return 0;
}

/*
 * 1 when no chunk write of @ch is still in flight, except those sent from
 * a copy (any write: @all), 0 if one is, <0 if one failed.
 */
OFI_HOT int coll_chan_drain(struct coll_group *g, struct coll_chan *ch,
			    bool all)
{
	struct coll_rma *r;
	uint32_t left;
	int done = 1, j;

	/* Only the slots written since they were last seen done: a small
	 * collective's send touches its own slot, not the whole window. */
	for (left = ch->posted; left; left &= left - 1) {
		j = __builtin_ctz(left);
		r = &ch->data[j];
		if (!coll_rma_poll(r)) {
			if (all || !r->copied)
				done = 0;
			continue;
		}
		ch->posted &= ~(1U << j);
		if (r->err)
			return coll_fail_peer(g, r->err);
	}
	return done;
}

/* What posting chunk @seq answered: 1 posted, 0 to retry, <0 failed. */
static int chunk_posted(struct coll_group *g, struct coll_chan *ch, ssize_t ret,
			uint64_t seq)
{
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret)
		return coll_fail_peer(g, (int)-ret);
	ch->out_seq = seq;
	ch->posted |= 1U << (seq % OFI_COLL_WINDOW);
	return 1;
}

/*
 * The whole of a direct send step as chunk @seq, once the receiver asked
 * for it (its key landed with rdv_seq = @seq): 1 when posted, 0 to come
 * back, <0 on failure.
 */
static int step_send_direct(struct coll_group *g, struct coll_step *s,
			    struct coll_rma *r, uint64_t seq)
{
	struct coll_chan *ch = &g->chan[s->peer];
	uint64_t key;
	ssize_t ret;

	if (load_acquire(group_word(g, region_rdv_seq_word(g->n, s->peer))) <
	    (seq & COLL_SEQ_MASK))
		return chan_stalled(g, s->peer);
	key = *group_word(g, region_rdv_key_word(g->n, s->peer));
	r->copied = false;
	ret = coll_rma_write_key(g, s->peer, r, s->buf, s->len, key, 0,
				 coll_cq_data(g->me, seq), false);
	return chunk_posted(g, ch, ret, seq);
}

/*
 * After stores into @ch's peer: its reader, if it ever sleeps, is woken
 * (the provider fences and looks at its sleeping word). One that never
 * sleeps costs a load, no fence: it announced sleeping a while before
 * its first sound sleep (ofi_coll_wait_ready), so the load sees it.
 */
static void chan_wake(struct coll_group *g, struct coll_chan *ch)
{
	if (__atomic_load_n((uint64_t *)ch->peer + region_sleeper_word(g->n),
			    __ATOMIC_RELAXED))
		g->ce->shared->wake(g->ce->ep, ch->addr);
}

/*
 * Chunk @seq to a peer whose region is mapped here: the payload stored
 * into our slot there, then our ack of its chunks (pack[me]: only we
 * write it now), then the flag, released, so the receiver that sees the
 * flag sees the bytes; its reader woken if it sleeps.
 */
void coll_chunk_store(struct coll_group *g, struct coll_chan *ch, uint64_t seq,
		      const void *src, size_t len)
{
	volatile uint64_t *w = (volatile uint64_t *)ch->peer;
	uint8_t *slot =
		ch->peer + region_slot_offset(g->n, g->slot_size, g->me, seq);

	if (len)
		memcpy(len <= COLL_INL ? slot : slot + COLL_HEAD, src, len);
	g->inl += len <= COLL_INL;
	__atomic_store_n(w + region_pack_word(g->n, g->me), ch->in_seq,
			 __ATOMIC_RELAXED);
	if (ch->acked < ch->in_seq)
		ch->acked = ch->in_seq;
	__atomic_store_n((uint64_t *)(slot + COLL_SFLAG_OFF), seq,
			 __ATOMIC_RELEASE);
	ch->out_seq = seq;
	g->stores++;
	chan_wake(g, ch);
	line_prefetch(ch->peer + region_slot_offset(g->n, g->slot_size, g->me,
						    seq + 1),
		      true);
	g->ahead++;
}

/* What the peer consumed of our chunks: its acks and trailers. */
uint64_t coll_chan_acked(struct coll_group *g, size_t peer)
{
	uint64_t a = load_acquire(group_word(g, region_ack_word(g->n, peer)));
	uint64_t b = load_acquire(group_word(g, region_pack_word(g->n, peer)));

	return a > b ? a : b;
}

/*
 * Whether slot seq % W of the channel to @peer is free: the peer consumed
 * seq - W (the words the peer writes are read only when the last value
 * read says no: their cache lines stay put).
 */
bool coll_chan_room(struct coll_group *g, size_t peer, uint64_t seq)
{
	struct coll_chan *ch = &g->chan[peer];

	if (ch->out_acked + OFI_COLL_WINDOW < seq)
		ch->out_acked = coll_chan_acked(g, peer);
	return ch->out_acked + OFI_COLL_WINDOW >= seq;
}

/* Returns 1 when the step is done, 0 to come back, <0 on failure. */
int coll_step_send(struct coll_group *g, struct coll_op *op,
		   struct coll_step *s)
{
	struct coll_chan *ch = &g->chan[s->peer];
	struct coll_rma *r;
	const void *src;
	uint64_t seq;
	size_t len, off;
	ssize_t ret;

	for (; s->chunk < s->nchunks; s->chunk++) {
		seq = ch->out_seq + 1;
		r = &ch->data[seq % OFI_COLL_WINDOW];
		if (!coll_rma_poll(r))
			return chan_stalled(g, s->peer);
		if (r->err)
			return coll_fail_peer(g, r->err);
		if (s->direct) {
			ret = step_send_direct(g, s, r, seq);
			if (ret <= 0)
				return (int)ret;
			continue;
		}
		ch->ack_wait = !coll_chan_room(g, s->peer, seq);
		if (ch->ack_wait)
			return chan_stalled(g, s->peer);
		len = step_chunk_len(g, s);
		/* a barrier's steps carry no buffer: no offset from NULL */
		src = s->buf ? s->buf + s->chunk * group_chunk_size(g) : NULL;
		if (ch->peer) {
			coll_chunk_store(g, ch, seq, src, len);
			continue;
		}
		g->writes++;
		off = region_slot_offset(g->n, g->slot_size, g->me, seq);
		r->copied = len + COLL_TRAILER <= OFI_COLL_BOUNCE;
		if (r->copied) {
			/* with the trailer: our ack of the peer's chunks */
			memset(r->bounce, 0, COLL_TRAILER);
			memcpy(r->bounce, &ch->in_seq, sizeof(ch->in_seq));
			if (len) /* a barrier's chunks are empty */
				memcpy(r->bounce + COLL_TRAILER, src, len);
			ret = coll_rma_write(g, s->peer, r, r->bounce,
					     COLL_TRAILER + len,
					     off + COLL_ACK_OFF,
					     coll_cq_data(g->me, seq), false);
		} else {
			ret = coll_rma_write(g, s->peer, r, src, len,
					     off + COLL_HEAD,
					     coll_cq_data(g->me, seq), false);
		}
		ret = chunk_posted(g, ch, ret, seq);
		if (ret <= 0)
			return (int)ret;
		if (r->copied && ch->acked < ch->in_seq)
			ch->acked = ch->in_seq;
	}
	ret = coll_chan_drain(g, ch, false);
	return ret ? (int)ret : chan_stalled(g, s->peer);
}

OFI_HOT void coll_chan_flush_ack(struct coll_group *g, size_t peer)
{
	struct coll_chan *ch = &g->chan[peer];

	/* Every W/2 chunks: the sender still has W/2 slots meanwhile. */
	if (ch->in_seq - ch->acked < OFI_COLL_WINDOW / 2)
		return;
	if (!coll_rma_poll(&ch->ack)) {
		g->acks_owed = true;
		return;
	}
	if (ch->peer) {
		__atomic_store_n((volatile uint64_t *)ch->peer +
					 region_ack_word(g->n, g->me),
				 ch->in_seq, __ATOMIC_RELEASE);
		ch->acked = ch->in_seq;
		chan_wake(g, ch);
		return;
	}
	/* A failed ack is the peer's problem: it probes us if it stalls. */
	if (!coll_rma_write_word(g, peer, &ch->ack, ch->in_seq,
				 region_ack_word(g->n, g->me), false))
		ch->acked = ch->in_seq;
	else
		g->acks_owed = true;
}

/*
 * The acks coll_chan_flush_ack could not write when they fell due, retried:
 * every other ack is written by the receive that makes it due, so a
 * progress pass or a small broadcast looks at the channels only then,
 * not at all n of them each time.
 */
void coll_chan_flush_owed(struct coll_group *g)
{
	size_t i;

	if (!g->acks_owed)
		return;
	g->acks_owed = false;
	for (i = 0; i < g->n; i++)
		coll_chan_flush_ack(g, i);
}

/*
 * Where a direct chunk lands: the step's destination when it is copied,
 * else the channel's scratch buffer (one receive per channel at a time),
 * which the chunk is folded from.
 */
static uint8_t *direct_dest(struct coll_chan *ch, struct coll_step *s)
{
	uint8_t *p;

	if (s->mode == RM_COPY)
		return s->buf;
	if (ch->scratch_len < s->len) {
		p = realloc(ch->scratch, s->len);
		if (!p)
			return NULL;
		ch->scratch = p;
		ch->scratch_len = s->len;
	}
	return ch->scratch;
}

/* [@addr, @addr + @len) open to remote writes under a fresh direct key. */
static int direct_insert(struct coll_group *g, uint8_t *addr, size_t len,
			 uint64_t *key)
{
	struct ofi_mr_map *map = &g->ce->ep->domain->mr_map;
	struct iovec iov = {addr, len};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_REMOTE_WRITE,
		.iface = FI_HMEM_SYSTEM,
	};
	static uint64_t next_key; /* process-wide: endpoints share domains */
	int ret, tries;

	/* Keys with COLL_KEY_DIRECT set, which group keys never have; one
	 * still in use is skipped. */
	for (tries = 0; tries < 16; tries++) {
		attr.requested_key =
			OFI_MR_KEY_ENGINE | COLL_KEY_DIRECT |
			(__atomic_fetch_add(&next_key, 1, __ATOMIC_RELAXED) &
			 COLL_KEY_DIRECT_MASK);
		ret = ofi_mr_map_insert(map, &attr, OFI_MR_INTERNAL, key,
					&g->mr);
		if (ret != -FI_ENOKEY)
			break;
	}
	return ret;
}

/* A free entry of the cache, else the least recently used idle one. */
static struct coll_dreg *dreg_victim(struct coll_group *g)
{
	struct coll_dreg *d, *v = NULL;
	size_t i;

	for (i = 0; i < OFI_COLL_DREG_CACHE; i++) {
		d = &g->dreg[i];
		if (!d->used)
			return d;
		if (!d->refs && (!v || d->used < v->used))
			v = d;
	}
	return v;
}

void coll_dreg_drop(struct coll_group *g, struct coll_dreg *d)
{
	if (d->used)
		(void)ofi_mr_map_remove(&g->ce->ep->domain->mr_map, d->key);
	memset(d, 0, sizeof(*d));
}

/* A new cache entry for [@addr, @addr + @len), open; NULL if all busy. */
static int dreg_add(struct coll_group *g, uint8_t *addr, size_t len,
		    struct coll_dreg **out)
{
	struct coll_dreg *d = dreg_victim(g);
	int ret;

	*out = NULL;
	if (!d)
		return 0;
	coll_dreg_drop(g, d);
	ret = direct_insert(g, addr, len, &d->key);
	if (ret)
		return ret;
	d->addr = addr;
	d->len = len;
	*out = d;
	return 0;
}

/*
 * A direct receive's destination, registered for the step: from the
 * cache when a call registered the same range before (its access given
 * back), else a new entry, else (every entry busy) a registration of
 * the step's own.
 */
static int direct_register(struct coll_group *g, struct coll_step *s)
{
	struct ofi_mr_map *map = &g->ce->ep->domain->mr_map;
	uint8_t *addr = direct_dest(&g->chan[s->peer], s);
	struct coll_dreg *d = NULL;
	size_t i;
	int ret;

	if (!addr)
		return -FI_ENOMEM;
	g->dregs++;
	for (i = 0; i < OFI_COLL_DREG_CACHE && !d; i++) {
		if (g->dreg[i].used && g->dreg[i].addr == addr &&
		    g->dreg[i].len == s->len)
			d = &g->dreg[i];
	}
	if (d) {
		g->dhits++;
		if (!d->refs)
			(void)ofi_mr_map_set_access(map, d->key,
						    FI_REMOTE_WRITE);
	} else {
		ret = dreg_add(g, addr, s->len, &d);
		if (ret)
			return ret;
	}
	if (!d) {
		ret = direct_insert(g, addr, s->len, &s->key);
		s->reg = !ret;
		return ret;
	}
	d->refs++;
	d->used = ++g->dclock;
	s->key = d->key;
	s->dreg = (uint8_t)(d - g->dreg + 1);
	s->reg = true;
	return 0;
}

void coll_direct_unregister(struct coll_group *g, struct coll_step *s)
{
	struct ofi_mr_map *map = &g->ce->ep->domain->mr_map;
	struct coll_dreg *d;

	if (!s->reg)
		return;
	s->reg = false;
	if (!s->dreg) {
		(void)ofi_mr_map_remove(map, s->key);
		return;
	}
	d = &g->dreg[s->dreg - 1];
	s->dreg = 0;
	/* Access taken away, once writes validated before let go: nothing
	 * lands once the call that asked ended. */
	if (!--d->refs)
		(void)ofi_mr_map_set_access(map, d->key, 0);
}

/*
 * A direct receive step: register the destination, write its key into
 * the sender's rdv_key[me] (signalling chunk @seq), then wait for the
 * chunk as for any other. 1 when done, 0 to come back, <0 on failure.
 */
static int step_recv_direct(struct coll_group *g, struct coll_op *op,
			    struct coll_step *s)
{
	struct coll_chan *ch = &g->chan[s->peer];
	uint64_t seq = ch->in_seq + 1;
	ssize_t ret;

	if (!s->reg && (ret = direct_register(g, s)))
		return (int)ret;
	if (!s->asked) {
		if (!coll_rma_poll(&ch->rdv))
			return chan_stalled(g, s->peer);
		ch->rdv.val = s->key;
		ret = coll_rma_write(
			g, s->peer, &ch->rdv, &ch->rdv.val, sizeof(ch->rdv.val),
			region_rdv_key_word(g->n, g->me) * sizeof(uint64_t),
			coll_cq_data(g->me, seq) | COLL_RDV, false);
		if (ret == -FI_EAGAIN)
			return 0;
		if (ret)
			return coll_fail_peer(g, (int)-ret);
		s->asked = true;
	}
	if (load_acquire(group_word(g, region_flag_word(g->n, s->peer, seq))) <
	    seq) {
		coll_chan_flush_ack(g, s->peer);
		return chan_stalled(g, s->peer);
	}
	coll_direct_unregister(g, s);
	if (s->mode != RM_COPY) {
		ret = coll_reduce(op, s->mode == RM_FOLD, s->buf, ch->scratch,
				  s->len);
		if (ret)
			return (int)ret;
	}
	ch->in_seq = seq;
	s->chunk = s->nchunks;
	coll_chan_flush_ack(g, s->peer);
	return 1;
}

int coll_step_recv(struct coll_group *g, struct coll_op *op,
		   struct coll_step *s)
{
	struct coll_chan *ch = &g->chan[s->peer];
	uint64_t seq;
	uint8_t *dst, *src;
	size_t len;
	int ret;

	if (s->direct)
		return step_recv_direct(g, op, s);
	while (s->chunk < s->nchunks) {
		seq = ch->in_seq + 1;
		len = step_chunk_len(g, s);
		if (!chunk_landed(g, s->peer, seq, len, &src)) {
			coll_chan_flush_ack(g, s->peer);
			/* a peer pinned to our CPU runs only once we
			 * stop: no spin can bring its chunk */
			if (g->here && g->here[s->peer])
				ofi_yield_peer_here();
			return chan_stalled(g, s->peer);
		}
		dst = s->buf ? s->buf + s->chunk * group_chunk_size(g) : NULL;
		if (len && s->mode == RM_COPY) {
			memcpy(dst, src, len);
		} else if (len) {
			ret = coll_reduce(op, s->mode == RM_FOLD, dst, src,
					  len);
			if (ret)
				return ret;
		}
		ch->in_seq = seq;
		s->chunk++;
		/* A one-way stream (a broadcast's): the sender runs ahead.
		 * Not in an exchange (barrier, reduction), where the peer
		 * is about to store into that line itself. */
		if (g->shared && s->mode == RM_COPY && len)
			slot_prefetch_next(g, s->peer, seq);
		coll_chan_flush_ack(g, s->peer);
		/* a chunk stored by a peer is work no provider saw */
		if (g->shared)
			ofi_yield_busy();
	}
	return 1;
}

/* Our own contribution folded into the accumulator (canonical order). */
int coll_step_fold(struct coll_op *op, struct coll_step *s)
{
	uint8_t *in;
	int ret;

	s->chunk = s->nchunks;
	if (!s->len)
		return 1;
	if (s->mode == RM_REDUCE) { /* commutative, from our own tmp */
		ret = coll_reduce(op, false, s->buf, (void *)s->src, s->len);
		return ret ? ret : 1;
	}
	/* The source is the caller's const buffer: fold a copy. */
	in = malloc(s->len);
	if (!in)
		return -FI_ENOMEM;
	memcpy(in, s->src, s->len);
	ret = coll_reduce(op, true, s->buf, in, s->len);
	free(in);
	return ret ? ret : 1;
}
