// campaign-<id>: imports the contact CSV (state syncing), then dials inside schedule slots with at most
// min(max_concurrency, organization ceiling, caller-ID pool) calls in flight, waits for each call's outcome signal,
// schedules retries by the spec's formula, trips the circuit breaker, and continues-as-new before its history grows
// large. Contacts and attempts live in PostgreSQL (activities); this workflow holds the cursor, the in-flight set,
// counters, state and the breaker window (in workflow time). Deterministic: only activities, timers and handlers.
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { CampaignActivities, DialOutcome } from '../../activities/campaign.ts';
import {
  decideRetry,
  evaluateBreaker,
  isFailure,
  msUntilDialable,
  nextSlotStart,
  pruneWindow,
  type AttemptOutcome,
  type BreakerEvent,
} from '../../core/campaigns/policy.ts';
import type { CampaignLogEntry, CampaignSettings, CampaignState } from '../../core/campaigns/schemas.ts';
import {
  CampaignStateKey,
  callOutcomeSignal,
  editUpdate,
  ILLEGAL_TRANSITION,
  pauseUpdate,
  progressQuery,
  resumeUpdate,
  startUpdate,
  type CallOutcomeSignal,
  type CampaignCarry,
  type CampaignInput,
  type InFlight,
} from './messages.ts';

// Short timeouts: these are quick database writes, and a worker that dies mid-activity should be noticed soon.
const db = proxyActivities<CampaignActivities>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});
const importer = proxyActivities<CampaignActivities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10, nonRetryableErrorTypes: ['CampaignSourceInvalid', 'CampaignNotFound'] },
  summary: 'Import the contact CSV',
});
/** A dial is exactly-once by its business key, so retrying it is safe; after 8 attempts it counts as initiation_failed. */
const dialOptions: ActivityOptions = {
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '20s', maximumAttempts: 8, nonRetryableErrorTypes: ['CampaignNotFound'] },
};

/** How long a campaign waits before asking again for an organization slot or a free caller ID. */
const SLOT_RETRY_MS = 5_000;
/** How long a call may stay in flight without an outcome signal before the rows are checked directly. */
const RECONCILE_MS = 60_000;

const reason = (err: unknown) => (err instanceof ActivityFailure && err.cause ? err.cause.message : err instanceof Error ? err.message : String(err));
const iso = (ms: number) => new Date(ms).toISOString();

export async function campaignWorkflow(input: CampaignInput): Promise<CampaignState> {
  const { campaignId } = input;
  const carry = input.carry;
  let state: CampaignState = carry?.state ?? 'created';
  /** The state as last written to the campaign row (what the api answers with). */
  let persisted: CampaignState = state;
  let settings: CampaignSettings | null = carry?.settings ?? null;
  let cursor = carry?.cursor ?? 0;
  let window: BreakerEvent[] = carry?.window ?? [];
  let imported = carry?.imported ?? false;
  let dialed = carry?.dialed ?? 0;
  const runs = (carry?.runs ?? 0) + 1;
  const inFlight = new Map<string, InFlight & { since: number }>();
  for (const f of carry?.inFlight ?? []) inFlight.set(`${f.contactId}:${f.attempt}`, { ...f, since: Date.now() });
  const early = new Map<string, CallOutcomeSignal>((carry?.early ?? []).map((o) => [o.callId, o]));
  /** Contacts refused for want of an organization slot / caller ID / wallet: dialed again first. */
  const held: Array<{ contactId: number; attempt: number }> = [...(carry?.held ?? [])];
  const finished: Array<{ entry: InFlight; outcome: AttemptOutcome }> = [];
  let pendingDials = 0;
  let capacity = -1;
  let capacityStale = true;
  let wake = 0;
  let slotRetryAt = 0;
  let waitingUntil: number | null = null;
  let waitingFor: string | null = null;
  let lastSlotLog: number | null = null;
  let lineWaitLogged = false;
  let executed = 0;
  let total = 0;

  const writeState = async (to: CampaignState, entry: Omit<CampaignLogEntry, 'ts'> | null) => {
    state = to;
    upsertSearchAttributes([{ key: CampaignStateKey, value: to }]);
    await db.setState({ campaignId, state: to, at: Date.now(), log: entry });
    persisted = to;
    wake++;
  };
  const appendLog = (entry: Omit<CampaignLogEntry, 'ts'>) => db.appendLog({ campaignId, at: Date.now(), entry });
  const details = () => {
    const wait = waitingUntil ? ` · waiting for ${waitingFor} until ${iso(waitingUntil)}` : waitingFor ? ` · waiting for ${waitingFor}` : '';
    setCurrentDetails(`${state} · ${executed}/${total} contacts done · ${inFlight.size} in flight (limit ${Math.max(capacity, 0)}) · ${dialed} dials${wait}`);
  };
  const illegal = (action: string) => {
    throw ApplicationFailure.create({ type: ILLEGAL_TRANSITION, message: `Cannot ${action} a campaign in state '${state}'`, nonRetryable: true });
  };

  setHandler(callOutcomeSignal, (o) => {
    for (const entry of inFlight.values()) {
      if (entry.callId === o.callId) {
        inFlight.delete(`${entry.contactId}:${entry.attempt}`);
        finished.push({ entry, outcome: toOutcome(o) });
        return;
      }
    }
    // Not (yet) known: keep it only while a dial is still returning its call id; anything else is a duplicate.
    if (pendingDials > 0) early.set(o.callId, o);
  });

  let startRequested = carry !== undefined;
  // Idempotent: Temporal may deliver the api's update-with-start again (the same request re-sent); a second start of
  // a campaign already under way answers its state. The api refuses to start a campaign that is not `created`.
  setHandler(startUpdate, async () => {
    startRequested = true;
    await condition(() => persisted !== 'created');
    return persisted;
  }, { validator: () => { if (state === 'completed' || state === 'failed') illegal('start'); } });

  setHandler(pauseUpdate, async () => {
    await writeState('paused', { level: 'info', event: 'paused', message: 'Campaign paused by request', details: {} });
    return state;
  }, { validator: () => { if (state !== 'running' && state !== 'syncing') illegal('pause'); } });

  setHandler(resumeUpdate, async () => {
    window = [];
    capacityStale = true;
    await writeState('running', { level: 'info', event: 'resumed', message: 'Campaign resumed by request', details: {} });
    return state;
  }, { validator: () => { if (state !== 'paused') illegal('resume'); } });

  setHandler(editUpdate, async (edit) => {
    if (settings) settings = { ...settings, ...edit };
    capacityStale = true;
    wake++;
    await appendLog({ level: 'info', event: 'settings_updated', message: 'Campaign settings updated', details: { fields: Object.keys(edit) } });
    return state;
  }, { validator: (_edit) => { if (state === 'completed' || state === 'failed') illegal('update'); } });

  setHandler(progressQuery, () => ({
    campaignId,
    state,
    inFlight: inFlight.size,
    capacity: Math.max(capacity, 0),
    cursor,
    dialed,
    waitingUntil: waitingUntil ? iso(waitingUntil) : null,
    waitingFor,
    settings: settings!,
    breaker: { calls: window.length, failures: window.filter((e) => e.failed).length },
    runs,
  }));

  // ── syncing: the import ────────────────────────────────────────────────────────────────────────────────
  if (!carry) {
    // The api starts the workflow with update-with-start; the start update may be delivered after the first task.
    await condition(() => startRequested);
    await writeState('syncing', { level: 'info', event: 'state_changed', message: 'Importing contacts', details: { from: 'created', to: 'syncing' } });
    const loaded = await db.loadCampaign({ campaignId });
    settings ??= loaded.settings;
    try {
      const imp = await importer.importContacts({ campaignId });
      await appendLog({ level: imp.failed > 0 ? 'warning' : 'info', event: 'contacts_imported', message: `Imported ${imp.imported} contacts`, details: imp });
    } catch (err) {
      await writeState('failed', { level: 'error', event: 'import_failed', message: `Contact import failed: ${reason(err)}`, details: {} });
      return state;
    }
    imported = true;
    if (state === 'syncing') {
      await writeState('running', { level: 'info', event: 'state_changed', message: 'Dialing started', details: { from: 'syncing', to: 'running' } });
    }
  }
  if (!settings) settings = (await db.loadCampaign({ campaignId })).settings;

  // ── dialing ────────────────────────────────────────────────────────────────────────────────────────────
  const dial = (c: { contactId: number; attempt: number; label: string }) => {
    const entry: InFlight & { since: number } = { contactId: c.contactId, attempt: c.attempt, callId: null, since: Date.now() };
    inFlight.set(`${c.contactId}:${c.attempt}`, entry);
    pendingDials++;
    dialed++;
    const acts = proxyActivities<CampaignActivities>({ ...dialOptions, summary: `Dial ${c.label} (attempt ${c.attempt})` });
    void acts
      .dialContact({ campaignId, contactId: c.contactId, attempt: c.attempt })
      .catch((err): DialOutcome => ({ kind: 'failed', callId: null, connectionStatus: 'initiation_failed', message: reason(err) }))
      .then((r) => onDialed(entry, r))
      .finally(() => { pendingDials--; });
  };

  const onDialed = (entry: InFlight & { since: number }, r: DialOutcome) => {
    const key = `${entry.contactId}:${entry.attempt}`;
    switch (r.kind) {
      case 'dialed': {
        lineWaitLogged = false;
        entry.callId = r.callId;
        const signalled = early.get(r.callId);
        if (r.ended || signalled) {
          inFlight.delete(key);
          finished.push({ entry, outcome: r.ended ?? toOutcome(signalled!) });
        }
        break;
      }
      case 'wait': {
        if (!lineWaitLogged) {
          lineWaitLogged = true;
          void appendLog({
            level: 'warning',
            event: 'waiting_for_line',
            message: r.waitFor === 'caller_id' ? 'Every caller ID of the configuration is busy: waiting for one to free up'
              : r.waitFor === 'media_capacity' ? 'No media node has room for another call: waiting for one (nothing was dialled)'
              : "The organization's concurrent-call limit is reached: waiting for a free slot",
            details: { wait_for: r.waitFor },
          });
        }
        inFlight.delete(key);
        dialed--;
        held.push({ contactId: entry.contactId, attempt: entry.attempt });
        slotRetryAt = Date.now() + SLOT_RETRY_MS;
        waitingFor = r.waitFor;
        if (r.waitFor === 'caller_id') capacityStale = true;
        break;
      }
      case 'refused': {
        inFlight.delete(key);
        dialed--;
        held.push({ contactId: entry.contactId, attempt: entry.attempt });
        if (state === 'running') {
          void writeState('paused', { level: 'error', event: 'billing_refused', message: `Campaign paused: ${r.message}`, details: { reason: r.reason } });
        }
        break;
      }
      case 'failed': {
        inFlight.delete(key);
        finished.push({ entry: { ...entry, callId: r.callId }, outcome: { callId: r.callId, connectionStatus: r.connectionStatus, endedReason: null, durationSeconds: null } });
        if (r.message) void appendLog({ level: 'warning', event: 'dial_failed', message: r.message, details: { contact_id: entry.contactId, attempt: entry.attempt, call_id: r.callId } });
        break;
      }
    }
    if ((r.kind === 'dialed' || r.kind === 'failed') && r.callId) early.delete(r.callId);
    // No other dial is returning: an unmatched early signal can only be a duplicate.
    if (pendingDials <= 1) early.clear();
    wake++;
  };

  /** Records every finished attempt in one activity, schedules retries by the formula, then checks the breaker. */
  const settle = async (batch: Array<{ entry: InFlight; outcome: AttemptOutcome }>) => {
    const now = Date.now();
    const items = batch.map((f) => {
      const failure = isFailure(f.outcome);
      window.push({ t: now, failed: failure });
      const decision = decideRetry(settings!.retry, f.outcome, f.entry.attempt, Math.random);
      return {
        contactId: f.entry.contactId,
        attempt: f.entry.attempt,
        outcome: f.outcome,
        failure,
        retry: decision.retry ? { at: now + Math.round(decision.delaySeconds * 1000), delaySeconds: decision.delaySeconds, reason: decision.reason } : null,
      };
    });
    window = pruneWindow(window, settings!.breaker, now);
    const counts = await db.recordOutcomes({ campaignId, at: now, items });
    executed = counts.executed;
    total = counts.total;
    const verdict = evaluateBreaker(settings!.breaker, window, now);
    if (verdict.trip && state === 'running') {
      window = [];
      await writeState('paused', {
        level: 'error',
        event: 'circuit_breaker_tripped',
        message: `Circuit breaker tripped: ${verdict.failures} of ${verdict.calls} calls failed in the last ${settings!.breaker.window_seconds} s (threshold ${settings!.breaker.failure_threshold})`,
        details: { failures: verdict.failures, calls: verdict.calls, fraction: verdict.fraction, ...settings!.breaker },
      });
    }
  };

  const reconcile = async () => {
    const stale = [...inFlight.values()].filter((f) => f.callId && Date.now() - f.since >= RECONCILE_MS).map((f) => f.callId!);
    if (!stale.length) return;
    for (const o of await db.endedCalls({ campaignId, callIds: stale })) {
      for (const entry of inFlight.values()) {
        if (entry.callId !== o.callId) continue;
        inFlight.delete(`${entry.contactId}:${entry.attempt}`);
        finished.push({ entry, outcome: toOutcome(o) });
      }
    }
    for (const f of inFlight.values()) if (f.callId && stale.includes(f.callId)) f.since = Date.now();
  };

  const wait = async (what: string | null, ms: number | null, extra: () => boolean = () => false) => {
    const w = wake;
    waitingFor = what;
    waitingUntil = ms !== null && Number.isFinite(ms) ? Date.now() + ms : null;
    details();
    const woke = () => wake !== w || finished.length > 0 || extra();
    if (ms === null || !Number.isFinite(ms)) await condition(woke);
    else await condition(woke, Math.max(1, Math.ceil(ms)));
    waitingFor = null;
    waitingUntil = null;
  };

  let continueRequested = false;
  for (;;) {
    while (finished.length) await settle(finished.splice(0));
    if (state === 'completed' || state === 'failed') break;
    if (state === 'paused') {
      await wait('resume', inFlight.size ? RECONCILE_MS : null);
      await reconcile();
      continue;
    }
    const info = workflowInfo();
    continueRequested ||= info.continueAsNewSuggested || (input.continueAfterEvents !== undefined && info.historyLength >= input.continueAfterEvents);
    if (continueRequested) {
      if (pendingDials === 0 && finished.length === 0) break;
      await wait('in-flight dials to settle', RECONCILE_MS, () => pendingDials === 0);
      continue;
    }
    const now = Date.now();
    const untilSlot = msUntilDialable(settings.schedule, now);
    if (untilSlot > 0) {
      const next = settings.schedule ? nextSlotStart(settings.schedule, now) : null;
      if (next !== lastSlotLog) {
        lastSlotLog = next;
        await appendLog({ level: 'info', event: 'slot_wait', message: `Outside the schedule: waiting for the next slot at ${next ? iso(next) : 'never'}`, details: { until: next ? iso(next) : null, timezone: settings.schedule?.timezone ?? null } });
      }
      await wait('schedule slot', inFlight.size ? Math.min(untilSlot, RECONCILE_MS) : untilSlot);
      await reconcile();
      continue;
    }
    if (capacityStale) {
      const c = await db.capacity({ campaignId, maxConcurrency: settings.maxConcurrency });
      if (c.capacity === 0 && capacity !== 0) {
        await appendLog({ level: 'warning', event: 'no_capacity', message: c.message, details: c });
      }
      capacity = c.capacity;
      capacityStale = false;
    }
    const free = capacity - inFlight.size;
    if (free <= 0) {
      await wait('a free line', RECONCILE_MS);
      await reconcile();
      continue;
    }
    if (held.length) {
      if (Date.now() < slotRetryAt) {
        await wait(waitingFor ?? 'organization slot', slotRetryAt - Date.now());
        capacityStale = true;
        continue;
      }
      for (const h of held.splice(0, free)) dial({ ...h, label: `contact ${h.contactId}` });
      continue;
    }
    const batch = await db.nextContacts({ campaignId, cursor, limit: free, now: Date.now() });
    for (const c of batch.contacts) {
      if (c.attempt === 1) cursor = Math.max(cursor, c.contactId);
      dial({ contactId: c.contactId, attempt: c.attempt, label: `contact #${c.rowNumber} ${c.phoneNumber}` });
    }
    executed = batch.executed;
    total = batch.total;
    details();
    if (batch.contacts.length) continue;
    if (inFlight.size === 0 && held.length === 0 && !batch.moreQueued && batch.nextRetryAt === null && finished.length === 0) {
      await writeState('completed', { level: 'info', event: 'completed', message: `Campaign completed: ${batch.executed} contacts done`, details: { executed: batch.executed, total: batch.total } });
      break;
    }
    const untilRetry = batch.nextRetryAt !== null ? Math.max(1, batch.nextRetryAt - Date.now()) : null;
    await wait(untilRetry !== null && inFlight.size === 0 ? 'next retry' : 'calls to end', inFlight.size ? Math.min(untilRetry ?? RECONCILE_MS, RECONCILE_MS) : untilRetry);
    await reconcile();
  }

  details();
  if (state === 'completed' || state === 'failed') {
    await condition(allHandlersFinished);
    return state;
  }
  // continue-as-new: every dial settled; calls still ringing/talking are carried by call id.
  await condition(allHandlersFinished);
  log.info('campaign continues as new', { campaignId, historyLength: workflowInfo().historyLength });
  const next: CampaignCarry = {
    state,
    cursor,
    inFlight: [...inFlight.values()].map(({ contactId, attempt, callId }) => ({ contactId, attempt, callId })),
    window,
    early: [...early.values()],
    held: held.splice(0),
    settings,
    imported,
    dialed,
    runs,
  };
  return continueAsNew<typeof campaignWorkflow>({ ...input, carry: next });
}

function toOutcome(o: CallOutcomeSignal): AttemptOutcome {
  return { callId: o.callId, connectionStatus: o.connectionStatus, endedReason: o.endedReason, durationSeconds: o.durationSeconds };
}
