import {
  create,
  fromJson,
  toJson,
  type DescMessage,
  type JsonValue,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';

/**
 * A bus subject and the proto message it carries, declared once by the service that owns it
 * (proto/topics/<domain>.ts). `subject` may end in a wildcard (`emails.>`) for a family of
 * subjects that share one message.
 */
export interface Topic<D extends DescMessage> {
  readonly subject: string;
  readonly schema: D;
}

export const topic = <D extends DescMessage>(subject: string, schema: D): Topic<D> => ({ subject, schema });

/**
 * The outbox row of a message: its proto3 JSON (canonical names, RFC 3339 timestamps), so the
 * stored and published payload stays readable and a consumer built on an older schema still
 * reads it (unknown fields are ignored).
 */
export function busMessage<D extends DescMessage>(
  t: Topic<D>,
  init: MessageInitShape<D>,
  subject = t.subject,
): { subject: string; payload: JsonValue } {
  return { subject, payload: toJson(t.schema, create(t.schema, init)) };
}

/** A consumer's view of a received payload, as the generated type. */
export function readBusMessage<D extends DescMessage>(t: Topic<D>, data: unknown): MessageShape<D> {
  return fromJson(t.schema, data as JsonValue, { ignoreUnknownFields: true });
}
