import { useState } from "react";
import { useMutation } from "../../api/hooks.ts";
import { CreateTrustedProviderDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { formatNumber } from "../../ui/format.ts";
import { ONLY_OWNERS, type Provider, type Settings } from "./agent-cells.tsx";

/** The longest max_auth_age the API takes (30 days). */
const MAX_AUTH_AGE_LIMIT = 2_592_000;

/** The form that trusts another ID-JAG provider (owners only). */
export function AddProvider({
  settings,
  disabled,
  reasonId,
  onAdded,
}: {
  settings: Settings | undefined;
  disabled: boolean;
  reasonId: string;
  onAdded(provider: Provider): void;
}) {
  const [issuer, setIssuer] = useState("");
  const [jwksUrl, setJwksUrl] = useState("");
  const [maxAge, setMaxAge] = useState("");
  const [create, state] = useMutation(CreateTrustedProviderDocument);
  const submit = async () => {
    const result = await create({
      issuer: issuer.trim(),
      jwks_url: jwksUrl.trim(),
      max_auth_age: maxAge.trim() === "" ? null : Number(maxAge),
    });
    if (!result) return;
    setIssuer("");
    setJwksUrl("");
    setMaxAge("");
    onAdded(result.createTrustedProvider);
  };
  const cap = settings?.limits.trusted_providers;
  return (
    <section className="agents-add" aria-labelledby={`${reasonId}-add`}>
      <h3 id={`${reasonId}-add`}>Trust a provider</h3>
      {disabled && <p className="muted">{ONLY_OWNERS}</p>}
      {settings && cap !== undefined && (
        <p className="field-hint">
          {cap === 0
            ? `The ${settings.plan} plan cannot trust providers; a higher plan can.`
            : `The ${settings.plan} plan allows ${formatNumber(cap)} trusted provider${cap === 1 ? "" : "s"}; ${formatNumber(settings.trusted_providers)} in use.`}
        </p>
      )}
      <ErrorBanner error={state.error} fields={["issuer", "jwks_url", "max_auth_age"]} />
      <Form onSubmit={submit} aria-label="Trust a provider" className="agents-provider-form">
        <TextField
          label="Issuer"
          type="url"
          required
          maxLength={2000}
          placeholder="https://idp.example.com"
          hint="Exactly as the provider's ID-JAGs say in iss: https (http only for localhost outside production)."
          value={issuer}
          disabled={disabled}
          error={fieldError(state.error, "issuer")}
          onChange={(event) => setIssuer(event.target.value)}
        />
        <TextField
          label="JWKS URL"
          type="url"
          required
          maxLength={2000}
          placeholder="https://idp.example.com/.well-known/jwks.json"
          hint="Where the provider publishes its signing keys."
          value={jwksUrl}
          disabled={disabled}
          error={fieldError(state.error, "jwks_url")}
          onChange={(event) => setJwksUrl(event.target.value)}
        />
        <TextField
          label="Maximum sign-in age (seconds)"
          type="number"
          min={1}
          max={MAX_AUTH_AGE_LIMIT}
          step={1}
          inputMode="numeric"
          hint="Optional: ID-JAGs must then say the user signed in at most this long ago."
          value={maxAge}
          disabled={disabled}
          error={fieldError(state.error, "max_auth_age")}
          onChange={(event) => setMaxAge(event.target.value)}
        />
        <Actions>
          <Button
            type="submit"
            variant="primary"
            busy={state.pending}
            disabled={disabled}
            aria-describedby={disabled ? reasonId : undefined}
          >
            Trust provider
          </Button>
        </Actions>
      </Form>
    </section>
  );
}
