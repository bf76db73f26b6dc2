-- Which provider a payment is at ('' for those made before: the one http-protocol provider, the
-- sandbox or PAY_PROVIDER_URL), what the payer opens to pay it (a WeChat Pay code_url, an Alipay
-- qr_code: given back to a second press of Pay), and when the provider stops taking it.
-- +goose Up
ALTER TABLE payments ADD COLUMN provider varchar(16) NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN pay_url varchar(512) NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN expires_at timestamptz;
-- +goose Down
ALTER TABLE payments DROP COLUMN expires_at;
ALTER TABLE payments DROP COLUMN pay_url;
ALTER TABLE payments DROP COLUMN provider;
