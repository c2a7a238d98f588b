import { Prisma } from "../generated/prisma/client.ts";

export const Decimal = Prisma.Decimal;
export type Decimal = Prisma.Decimal;
/** What a Decimal can be made from: a decimal string, a Decimal, or an integer. */
export type DecimalValue = string | number | Prisma.Decimal;

/** Money is exact decimal arithmetic, rounded half-up to the cent (docs/api/conventions-and-errors.md). */
export const cents = (value: DecimalValue): Decimal =>
  new Decimal(value).toDecimalPlaces(2, Decimal.ROUND_HALF_UP);

export const sum = (values: DecimalValue[]): Decimal =>
  values.reduce<Decimal>((total, value) => total.plus(value), new Decimal(0));
