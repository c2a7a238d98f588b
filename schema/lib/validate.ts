import { validationFailed } from "./errors.ts";

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const CURRENCY = /^[A-Z]{3}$/;

/**
 * A parameter as a person reads it in a message: `input.name` is "Name", `first_name` "First name"
 * (the error's `param` keeps the exact name for programs).
 */
export function paramLabel(param: string): string {
  const words = param.replace(/^input\./, "").replaceAll("_", " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Trims a required text; empty or whitespace-only is a validation error. */
export function requiredText(param: string, value: string | null | undefined): string {
  const text = value?.trim();
  if (!text) throw validationFailed(param, `${paramLabel(param)} is required.`);
  return text;
}

/** Optional text: `undefined` stays absent, `null` and "" clear the field. */
export function optionalText(value: string | null | undefined): string | null | undefined {
  if (value === undefined) return undefined;
  const text = value?.trim();
  return text ? text : null;
}

export function optionalEmail(param: string, value: string | null | undefined): string | null | undefined {
  const email = optionalText(value);
  if (email && !EMAIL.test(email)) throw validationFailed(param, `${param} must be an e-mail address.`);
  return email?.toLowerCase() ?? email;
}

export function currency(param: string, value: string | null | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value === null || !CURRENCY.test(value)) {
    throw validationFailed(param, `${param} must be an ISO 4217 code in capitals, e.g. USD.`);
  }
  return value;
}

/** A field that may be omitted but not set to null. */
export function notNull<T>(param: string, value: T | null | undefined): T | undefined {
  if (value === null) throw validationFailed(param, `${param} cannot be null.`);
  return value;
}
