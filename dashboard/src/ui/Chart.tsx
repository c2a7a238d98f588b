import type { ChartData, ChartOptions } from "chart.js";
import { lazy, Suspense } from "react";

/**
 * A Chart.js chart on a canvas. Chart.js loads with the first chart shown (its own chunk), so
 * screens without a chart never download it. Only the chart types below are registered
 * (chart-canvas.tsx): add a controller there before using another type.
 */
export type ChartKind = "bar" | "line" | "doughnut";

export interface ChartProps<K extends ChartKind = ChartKind> {
  type: K;
  data: ChartData<K>;
  options?: ChartOptions<K>;
  /** What the chart shows, for screen readers (the canvas is an image to them). */
  label: string;
  /** CSS pixels; the width follows the container. */
  height?: number;
}

const ChartCanvas = lazy(() => import("./chart-canvas.tsx"));

export function Chart<K extends ChartKind>(props: ChartProps<K>) {
  const height = props.height ?? 240;
  return (
    <div className="chart" style={{ height }}>
      <Suspense
        fallback={
          <div className="chart-loading" role="status">
            Loading chart…
          </div>
        }
      >
        <ChartCanvas {...(props as unknown as ChartProps)} height={height} />
      </Suspense>
    </div>
  );
}
