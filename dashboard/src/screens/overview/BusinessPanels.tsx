import type { ReactNode } from "react";
import type { OverviewBusinessQuery, OverviewTotalFragment } from "../../generated/graphql.ts";
import { BASE, Link } from "../../router.tsx";
import { Chart } from "../../ui/Chart.tsx";
import { formatDate, formatNumber } from "../../ui/format.ts";
import { exactAmount, formatMoney } from "../../ui/money.ts";
import { Panel } from "../../ui/Page.tsx";
import { type ActivityLine, describeEvent } from "./activity.ts";

type Summary = OverviewBusinessQuery["summary"];
type Event = OverviewBusinessQuery["events"]["data"][number];

const plural = (count: number, one: string, many = `${one}s`) =>
  `${formatNumber(count)} ${count === 1 ? one : many}`;
const label = (value: string) => value.replaceAll("_", " ");

/** Amounts per currency, one per line (money is never added across currencies). */
function Amounts({ totals, none = "None" }: { totals: readonly OverviewTotalFragment[]; none?: string }) {
  if (totals.length === 0) return <span className="overview-amount">{none}</span>;
  return (
    <>
      {totals.map((total) => (
        <span key={total.currency} className="overview-amount" data-amount={exactAmount(total.amount)}>
          {formatMoney(total.amount, total.currency)}
        </span>
      ))}
    </>
  );
}

const countOf = (totals: readonly OverviewTotalFragment[]) =>
  totals.reduce((sum, total) => sum + total.count, 0);

/** One figure of the business: its name, its value, what it counts, and where to see the rows. */
function Figure({
  id,
  title,
  value,
  detail,
  to,
  tone,
}: {
  id: string;
  title: string;
  value: ReactNode;
  detail: string;
  to: string;
  tone?: "alert";
}) {
  return (
    <section
      className={`overview-figure${tone ? ` overview-figure-${tone}` : ""}`}
      aria-labelledby={`${id}-title`}
    >
      <h2 id={`${id}-title`}>{title}</h2>
      <p className="overview-value" data-testid={id}>
        {value}
      </p>
      <p className="overview-detail">
        <Link to={to}>{detail}</Link>
      </p>
    </section>
  );
}

/**
 * How the business is doing (GET /summary): what clients owe and what is overdue, what came in
 * this month, the pipeline, stock alerts and open tasks, with the invoices and leads drawn as
 * charts, and the latest events as recent activity.
 */
export function BusinessPanels({ summary, events }: { summary: Summary; events: readonly Event[] }) {
  const low = summary.stock.find((row) => row.status === "low_stock")?.count ?? 0;
  const out = summary.stock.find((row) => row.status === "out_of_stock")?.count ?? 0;
  const invoices = summary.invoices_by_status;
  const stages = summary.leads_by_stage;
  return (
    <>
      <div className="overview-figures">
        <Figure
          id="outstanding"
          title="Owed to you"
          value={<Amounts totals={summary.outstanding} />}
          detail={`${plural(countOf(summary.outstanding), "invoice")} sent, not paid in full`}
          to={`${BASE}/invoices?type=invoice`}
        />
        <Figure
          id="overdue"
          title="Overdue"
          value={<Amounts totals={summary.overdue} />}
          detail={`${plural(countOf(summary.overdue), "invoice")} past due on ${formatDate(summary.today)}`}
          to={`${BASE}/invoices?type=invoice&overdue=1`}
          {...(summary.overdue.length > 0 && { tone: "alert" as const })}
        />
        <Figure
          id="paid-this-month"
          title="Paid this month"
          value={<Amounts totals={summary.paid_this_month} />}
          detail={`${plural(countOf(summary.paid_this_month), "payment")} since ${formatDate(summary.month_start)}`}
          to={`${BASE}/invoices?status=paid`}
        />
        <Figure
          id="pipeline"
          title="Pipeline"
          value={<Amounts totals={summary.pipeline} />}
          detail={`${plural(
            stages
              .filter((row) => !["won", "lost"].includes(row.stage))
              .reduce((sum, row) => sum + row.count, 0),
            "open lead",
          )}`}
          to={`${BASE}/leads`}
        />
        <Figure
          id="stock"
          title="Stock alerts"
          value={<span className="overview-amount">{formatNumber(low + out)}</span>}
          detail={`${formatNumber(low)} low, ${formatNumber(out)} out of stock`}
          to={`${BASE}/inventory?status=low_stock`}
          {...(out > 0 && { tone: "alert" as const })}
        />
        <Figure
          id="tasks"
          title="Open tasks"
          value={<span className="overview-amount">{formatNumber(summary.open_tasks)}</span>}
          detail={`${formatNumber(summary.overdue_tasks)} overdue`}
          to={`${BASE}/projects`}
        />
      </div>
      <div className="grid-2">
        <Panel title="Invoices by status">
          <Chart
            type="bar"
            height={220}
            label={`Invoices by status: ${invoices.map((row) => `${label(row.status)} ${row.count}`).join(", ")}`}
            data={{
              labels: invoices.map((row) => label(row.status)),
              datasets: [
                { label: "Invoices", data: invoices.map((row) => row.count), backgroundColor: "#1d4ed8" },
              ],
            }}
            options={{ plugins: { legend: { display: false } }, scales: { y: { ticks: { precision: 0 } } } }}
          />
        </Panel>
        <Panel title="Leads by stage">
          <Chart
            type="bar"
            height={220}
            label={`Leads by stage: ${stages.map((row) => `${row.stage} ${row.count}`).join(", ")}`}
            data={{
              labels: stages.map((row) => row.stage),
              datasets: [
                { label: "Leads", data: stages.map((row) => row.count), backgroundColor: "#0f766e" },
              ],
            }}
            options={{ plugins: { legend: { display: false } }, scales: { y: { ticks: { precision: 0 } } } }}
          />
        </Panel>
      </div>
      <Panel title="Recent activity" actions={<Link to={`${BASE}/events`}>All events</Link>}>
        <Activity events={events} />
      </Panel>
    </>
  );
}

function Activity({ events }: { events: readonly Event[] }) {
  if (events.length === 0)
    return <p className="empty">Nothing yet: new leads, invoices and payments show up here.</p>;
  return (
    <ol className="overview-activity">
      {events.map((event) => {
        const line: ActivityLine = describeEvent(event.type, event.data.object);
        return (
          <li key={event.id}>
            {line.href ? <Link to={line.href}>{line.text}</Link> : <span>{line.text}</span>}
            <time className="muted" dateTime={event.created_at}>
              {new Date(event.created_at).toLocaleString()}
            </time>
          </li>
        );
      })}
    </ol>
  );
}
