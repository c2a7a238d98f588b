import {
  ArcElement,
  BarController,
  BarElement,
  CategoryScale,
  type ChartConfiguration,
  Chart as ChartJS,
  DoughnutController,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from "chart.js";
import { useEffect, useRef } from "react";
import type { ChartProps } from "./Chart.tsx";

// Registered by name so the bundle carries only these parts of Chart.js.
ChartJS.register(
  BarController,
  LineController,
  DoughnutController,
  BarElement,
  LineElement,
  PointElement,
  ArcElement,
  CategoryScale,
  LinearScale,
  Filler,
  Legend,
  Tooltip,
);
ChartJS.defaults.font.family =
  getComputedStyle(document.documentElement).fontFamily || "system-ui, sans-serif";
ChartJS.defaults.color = "#334155";
// Drawn at once: screenshots and reduced-motion users see the finished chart.
ChartJS.defaults.animation = false;

export default function ChartCanvas({ type, data, options, label }: ChartProps) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<ChartJS | null>(null);

  // biome-ignore lint/correctness/useExhaustiveDependencies: a new chart only for a new kind (see below).
  useEffect(() => {
    if (!canvas.current) return;
    const config = {
      type,
      data,
      options: { responsive: true, maintainAspectRatio: false, ...options },
    } as ChartConfiguration;
    chart.current = new ChartJS(canvas.current, config);
    return () => {
      chart.current?.destroy();
      chart.current = null;
    };
    // A new chart only when the kind changes; data and options are updated in place below.
  }, [type]);

  useEffect(() => {
    const current = chart.current;
    if (!current) return;
    current.data = data as ChartConfiguration["data"];
    current.options = {
      responsive: true,
      maintainAspectRatio: false,
      ...options,
    } as ChartConfiguration["options"] & object;
    current.update();
  }, [data, options]);

  return (
    <canvas ref={canvas} role="img" aria-label={label}>
      {label}
    </canvas>
  );
}
