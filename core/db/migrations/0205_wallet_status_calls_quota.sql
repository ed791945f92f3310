-- A monthly quota of calls (alongside the minutes quota) and an operator's hold on an organization's wallet.
--  monthly_calls_quota: NULL = unlimited; calls started this calendar month (UTC, rejected attempts not counted)
--                       at the quota refuse the next start with the spec's 402 string.
--  wallet_status:       'suspended' refuses every call start with 403 wallet_rejected (the spec's other wallet
--                       reason); wallet_status_reason is said in the refusal.
ALTER TABLE organizations
  ADD COLUMN monthly_calls_quota integer CHECK (monthly_calls_quota >= 0),
  ADD COLUMN wallet_status text NOT NULL DEFAULT 'active' CHECK (wallet_status IN ('active', 'suspended')),
  ADD COLUMN wallet_status_reason text;
