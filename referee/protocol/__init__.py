"""The wire protocol between the referee and bots: plain message types and their one serde.

:mod:`referee.protocol.messages` holds the messages as immutable Python values;
:mod:`referee.protocol.wire` is the only module that touches the generated ``_pb2`` types
(``kryt_proto``). Both the referee and the bot runtime (``sdk``) speak these types; the
package imports only the rules core and the generated code, so it is staged into every
bot's sandbox with them.
"""
