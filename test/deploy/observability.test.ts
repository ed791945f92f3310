// The observability profile of docker-compose.yml (Prometheus + Grafana + Jaeger) and its config files under
// deploy/: docker cannot run here, so the files are parsed and cross-checked: compose mounts files that exist,
// Prometheus scrapes the port and path the services serve /metrics on, Grafana's provisioning finds the dashboard
// and its datasource, and every PromQL expression of the dashboard names metrics (and grouping labels) that a
// running service really exports on /metrics.
import test from 'ava';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { registry } from '../../core/metrics.ts';

const root = path.resolve(import.meta.dirname, '../..');
const read = (p: string) => readFileSync(path.join(root, p), 'utf8');
const compose = parse(read('docker-compose.yml'), { merge: true }); // compose uses YAML merge keys (<<: *service)
const dashboard = JSON.parse(read('deploy/grafana/dashboards/voice-agent.json'));

let s: TestServer;
test.before(async () => {
  s = await startTestServer({ temporal: false });
});
test.after.always(async () => {
  await s?.close();
});

/** host path → container path of a service's bind mounts */
function binds(service: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const v of compose.services[service].volumes ?? []) {
    const [host, target] = String(v).split(':');
    if (host!.startsWith('./')) m.set(host!.slice(2), target!);
  }
  return m;
}

test('compose: the observability profile adds Prometheus, Grafana and Jaeger, with mounts that exist; the default set is unchanged', (t) => {
  const inProfile = Object.entries(compose.services as Record<string, { profiles?: string[] }>)
    .filter(([, svc]) => svc.profiles?.includes('observability')).map(([n]) => n).sort();
  t.deepEqual(inProfile, ['grafana', 'jaeger', 'prometheus']);
  for (const name of ['postgres', 'temporal', 'api', 'media', 'worker', 'proxy']) t.is(compose.services[name].profiles, undefined, name);
  for (const name of inProfile) {
    for (const host of binds(name).keys()) t.true(existsSync(path.join(root, host)), `${name} mounts ${host}`);
    t.regex(compose.services[name].image, /:[v\d]/, `${name} image is pinned`);
  }
  // named volumes are declared
  for (const v of ['prometheus', 'grafana']) t.true(v in compose.volumes, v);
  // Grafana never calls public hosts by default
  const genv = compose.services.grafana.environment;
  for (const k of ['GF_ANALYTICS_REPORTING_ENABLED', 'GF_ANALYTICS_CHECK_FOR_UPDATES', 'GF_ANALYTICS_CHECK_FOR_PLUGIN_UPDATES', 'GF_NEWS_NEWS_FEED_ENABLED']) t.is(genv[k], 'false', k);
  // traces are off unless the operator sets the endpoint (no default host)
  t.is(compose.services.api.environment.OTEL_EXPORTER_OTLP_ENDPOINT, '${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
});

test('the media process runs with the Node flags of scripts/infra.ts (MEDIA_NODE_FLAGS) in compose and in npm run media', async (t) => {
  const { MEDIA_NODE_FLAGS } = await import('../../scripts/infra.ts');
  const cmd: string[] = compose.services.media.command;
  t.deepEqual(cmd.slice(1, 1 + MEDIA_NODE_FLAGS.length), [...MEDIA_NODE_FLAGS]);
  const script: string = JSON.parse(read('package.json')).scripts.media;
  t.is(script, `node ${MEDIA_NODE_FLAGS.join(' ')} --import tsx media/main.ts`);
});

test('prometheus.yml scrapes /metrics of every api and media replica on the port the image serves', (t) => {
  const target = binds('prometheus').get('deploy/prometheus/prometheus.yml');
  t.is(target, '/etc/prometheus/prometheus.yml');
  t.true(compose.services.prometheus.command.includes(`--config.file=${target}`));
  const prom = parse(read('deploy/prometheus/prometheus.yml'));
  const port = Number(/ENV[^\n]*\bPORT=(\d+)/.exec(read('Dockerfile'))![1]);
  const jobs = Object.fromEntries(prom.scrape_configs.map((j: { job_name: string }) => [j.job_name, j]));
  t.deepEqual(Object.keys(jobs).sort(), ['api', 'media']);
  for (const job of ['api', 'media']) {
    t.is(jobs[job].metrics_path, '/metrics');
    t.deepEqual(jobs[job].dns_sd_configs[0].names, [job]);
    t.is(jobs[job].dns_sd_configs[0].port, port);
    t.truthy(compose.services[job], `compose service ${job}`);
  }
});

test('Grafana provisioning: the datasource uid the dashboard uses, and the folder the dashboard is mounted in', (t) => {
  const g = binds('grafana');
  const ds = parse(read('deploy/grafana/provisioning/datasources/prometheus.yml'));
  const prov = parse(read('deploy/grafana/provisioning/dashboards/dashboards.yml'));
  t.is(g.get('deploy/grafana/provisioning'), '/etc/grafana/provisioning');
  t.is(prov.providers[0].options.path, g.get('deploy/grafana/dashboards'));
  t.is(compose.services.grafana.environment.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH, `${g.get('deploy/grafana/dashboards')}/voice-agent.json`);
  t.is(ds.datasources[0].type, 'prometheus');
  t.is(ds.datasources[0].url, `http://prometheus:${compose.services.prometheus.ports[0].split(':')[1]}`);
  const uids = new Set<string>();
  for (const p of dashboard.panels) {
    if (p.type === 'row') continue;
    uids.add(p.datasource.uid);
    for (const target of p.targets) uids.add(target.datasource.uid);
  }
  t.deepEqual([...uids], [ds.datasources[0].uid]);
  // panel ids unique, panels inside the 24-column grid and not overlapping
  const ids = dashboard.panels.map((p: { id: number }) => p.id);
  t.is(new Set(ids).size, ids.length);
  const boxes = dashboard.panels.map((p: { gridPos: { x: number; y: number; w: number; h: number } }) => p.gridPos);
  for (const [i, a] of boxes.entries()) {
    t.true(a.x >= 0 && a.x + a.w <= 24, `panel ${ids[i]} inside the grid`);
    for (const b of boxes.slice(i + 1)) t.false(a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h, 'panels overlap');
  }
});

const FUNCTIONS = new Set(['sum', 'max', 'min', 'avg', 'rate', 'irate', 'increase', 'histogram_quantile', 'by', 'without', 'label_values']);

/** metric names and grouping/matcher labels of one PromQL expression */
function promql(expr: string): { metrics: string[]; labels: string[] } {
  const labels: string[] = [];
  let rest = expr.replace(/\b(?:by|without)\s*\(([^)]*)\)/g, (_m, l: string) => {
    labels.push(...l.split(',').map((x) => x.trim()).filter(Boolean));
    return ' ';
  });
  rest = rest.replace(/\{([^}]*)\}/g, (_m, body: string) => {
    for (const m of body.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)) labels.push(m[1]!);
    return ' ';
  });
  rest = rest.replace(/\[[^\]]*\]/g, ' ').replace(/"[^"]*"/g, ' ').replace(/\b\d+(\.\d+)?\b/g, ' ');
  const metrics = [...rest.matchAll(/[a-zA-Z_:][\w:]*/g)].map((m) => m[0]).filter((w) => !FUNCTIONS.has(w));
  return { metrics, labels };
}

test('every dashboard query uses metrics and labels the service exports on /metrics', async (t) => {
  const text = await (await fetch(`${s.origin}/metrics`)).text();
  const families = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  t.true(families.has('voice_turn_stage_seconds'));
  // the template variable: label_values(metric, label) reads as `by (label) (metric)`
  const lv = /^label_values\((\w+),\s*(\w+)\)$/.exec(dashboard.templating.list[0].query.query)!;
  const exprs: string[] = [`sum by (${lv[2]}) (${lv[1]})`];
  for (const p of dashboard.panels) for (const target of p.targets ?? []) exprs.push(target.expr);
  t.true(exprs.length > 10);
  const used = new Set<string>();
  for (const expr of exprs) {
    const { metrics, labels } = promql(expr);
    t.true(metrics.length > 0, expr);
    for (const name of metrics) {
      const family = families.has(name) ? name : name.replace(/_(bucket|count|sum)$/, '');
      t.true(families.has(family), `${name} is exported (${expr})`);
      if (families.get(family) !== 'histogram') t.is(family, name, `${name}: suffix only on histograms`);
      used.add(family);
      // labels: the metric's own label names, plus the target labels Prometheus adds and the bucket bound
      const own = (registry.getSingleMetric(family) as unknown as { labelNames?: string[] } | undefined)?.labelNames ?? [];
      for (const l of labels) t.true(['job', 'instance', 'le', ...own].includes(l), `${family} has label ${l} (${expr})`);
    }
  }
  // the turn-latency histogram, live calls, capacity and process load are all on the dashboard
  for (const m of ['voice_turn_stage_seconds', 'voice_interruptions_total', 'voice_active_calls', 'voice_media_call_capacity', 'voice_media_event_loop_lag_seconds', 'process_cpu_seconds_total', 'process_resident_memory_bytes']) t.true(used.has(m), m);
});

test('the PromQL reader finds metrics and labels (so the check above cannot pass vacuously)', (t) => {
  t.deepEqual(promql('histogram_quantile(0.95, sum by (le, stage) (rate(voice_turn_stage_seconds_bucket{provider=~"$provider"}[$__rate_interval])))'), {
    metrics: ['voice_turn_stage_seconds_bucket'], labels: ['le', 'stage', 'provider'],
  });
  t.deepEqual(promql('sum by (a) (x_total) / sum by (b) (y{job="media"})'), { metrics: ['x_total', 'y'], labels: ['a', 'b', 'job'] });
});
