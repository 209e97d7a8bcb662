import { dayWords, dollars, percent } from './format';
import { Table } from './components';

// Charts drawn on the server as SVG (the page runs no script): each an image with a title and a description
// for screen readers, and the table of its figures under it.

const W = 640;
const H = 220;
const PAD = { left: 64, right: 8, top: 12, bottom: 28 };

/** Round up to 1, 2 or 5 times a power of ten: the chart's top. */
function niceCeil(v: number): number {
  if (v <= 0) return 100;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

export function DailyChart(props: { id: string; days: { day: number; collected: bigint; returned: bigint }[] }) {
  // Sums of cents exact at any size (BigInt): the words and the table give them in full; only the bars'
  // geometry reads them as numbers.
  const days = props.days;
  const top = niceCeil(Math.max(0, ...days.map((d) => Math.max(Number(d.collected), Number(d.returned)))));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, days.length);
  const bar = Math.max(1, slot / 2 - 0.5);
  const y = (cents: number | bigint) => PAD.top + plotH - (Number(cents) / top) * plotH;
  const totalC = days.reduce((s, d) => s + d.collected, 0n);
  const totalR = days.reduce((s, d) => s + d.returned, 0n);
  const first = days[0];
  const last = days[days.length - 1];
  const range = first && last ? `${dayWords(first.day)} to ${dayWords(last.day)}` : '';
  const busiest = days.reduce((b, d) => (d.collected > (b?.collected ?? -1n) ? d : b), days[0]);
  const desc =
    `Collected ${dollars(totalC)} and reversed ${dollars(totalR)} from ${range}.` +
    (busiest && busiest.collected > 0n ? ` The most collected in a day was ${dollars(busiest.collected)} on ${dayWords(busiest.day)}.` : ' Nothing was collected.');
  return (
    <figure>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${props.id}-t ${props.id}-d`} class="chart">
        <title id={`${props.id}-t`}>Collected and reversed per day, last 60 days</title>
        <desc id={`${props.id}-d`}>{desc}</desc>
        {[0, 0.5, 1].map((f) => (
          <g>
            <line x1={PAD.left} x2={W - PAD.right} y1={y(top * f)} y2={y(top * f)} class="grid" />
            <text x={PAD.left - 6} y={y(top * f) + 4} text-anchor="end" class="axis">
              {dollars(BigInt(Math.round(top * f))).replace(/\.00$/, '')}
            </text>
          </g>
        ))}
        {days.map((d, i) => {
          const x = PAD.left + i * slot;
          return (
            <g>
              {d.collected > 0n && <rect x={x} y={y(d.collected)} width={bar} height={Math.max(1, y(0) - y(d.collected))} class="collected" />}
              {d.returned > 0n && <rect x={x + bar} y={y(d.returned)} width={bar} height={Math.max(1, y(0) - y(d.returned))} class="returned" />}
            </g>
          );
        })}
        {first && (
          <text x={PAD.left} y={H - 8} class="axis">
            {dayWords(first.day)}
          </text>
        )}
        {last && (
          <text x={W - PAD.right} y={H - 8} text-anchor="end" class="axis">
            {dayWords(last.day)}
          </text>
        )}
      </svg>
      <figcaption>
        <span class="key collected">■</span> Collected <span class="key returned">■</span> Reversed
      </figcaption>
      <details>
        <summary>The figures of this chart</summary>
        <Table
          caption="Collected and reversed per day (UTC)"
          headers={['Day', 'Collected', 'Reversed']}
          rows={days.map((d) => [<time datetime={new Date(d.day).toISOString().slice(0, 10)}>{dayWords(d.day)}</time>, dollars(d.collected), dollars(d.returned)])}
        />
      </details>
    </figure>
  );
}

export interface RateBar {
  name: string;
  rate: number;
  threshold: number;
  status: string;
  returns: number;
}

/** Each return rate as a bar against its own scale (twice its threshold), the threshold marked. */
export function RatesChart(props: { id: string; debits: number; rates: RateBar[] }) {
  const rowH = 44;
  const h = props.rates.length * rowH + 16;
  // Room for the class names at a phone's larger label size.
  const left = 170;
  const width = W - left - 90;
  const desc = props.rates.map((r) => `${r.name} ${percent(r.rate)} against a threshold of ${percent(r.threshold)}: ${r.status}`).join('. ') + '.';
  return (
    <figure>
      <svg viewBox={`0 0 ${W} ${h}`} role="img" aria-labelledby={`${props.id}-t ${props.id}-d`} class="chart">
        <title id={`${props.id}-t`}>Return rates over 60 days against their thresholds</title>
        <desc id={`${props.id}-d`}>{desc}</desc>
        {props.rates.map((r, i) => {
          const scale = Math.max(r.threshold * 2, r.rate);
          const y0 = 8 + i * rowH;
          const len = Math.min(width, (r.rate / scale) * width);
          const tx = left + (r.threshold / scale) * width;
          return (
            <g>
              <text x={left - 8} y={y0 + 20} text-anchor="end" class="axis">
                {r.name}
              </text>
              <rect x={left} y={y0 + 6} width={width} height={20} class="track" />
              {len > 0 && <rect x={left} y={y0 + 6} width={Math.max(1, len)} height={20} class={`rate ${r.status}`} />}
              <line x1={tx} x2={tx} y1={y0} y2={y0 + 32} class="threshold" />
              <text x={tx + 4} y={y0 + 40} class="axis">
                {`threshold ${percent(r.threshold)}`}
              </text>
              <text x={left + width + 8} y={y0 + 20} class="axis">
                {percent(r.rate)}
              </text>
            </g>
          );
        })}
      </svg>
      <Table
        caption={`Return rates over the last 60 days (${props.debits} ACH debits)`}
        headers={['Class', 'Returns', 'Rate', 'Threshold', 'Status']}
        rows={props.rates.map((r) => [r.name, String(r.returns), percent(r.rate), percent(r.threshold), r.status])}
      />
    </figure>
  );
}
